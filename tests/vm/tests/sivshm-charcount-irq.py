#!/usr/bin/env python3
"""SIVSHM in VMs: a mapper VM and 3 reducer VMs run charcount in interrupt
mode through the sivshm device and sivshm.ko; the total must match the
mapper's direct count, and doorbell
interrupts must have reached each reducer."""

from vmtest import main
from sivshm import charcount_test

main(lambda: charcount_test("irq"))
