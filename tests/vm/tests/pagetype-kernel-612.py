#!/usr/bin/env python3
# runtests: cores 1
"""kvm_pagetype.ko on Debian's other kernel: 6.12, from bookworm-backports
(Debian 13's), whose page-track API changed in 6.7 (tracking by gfn, a
notifier without the vCPU, track_remove_region).  make
dkms-source-pagetype, dkms add and dkms build against the 6.12 headers; a
level 1 booted on 6.12 with kvm_amd npt=1 (TDP) loads that module and
runs pagetype-npt, pagetype-ops and pagetype-fuzz.  Under TDP 6.12
emulates a guest access that meets a tracked table, and kvm_pagetype has
the emulator translate the instruction's own operands
(docs/pagetype.md): without that, pagetype-npt's load reads the L4 and
pagetype-ops' legal-writes stores into it.  pagetype-kernel-612-npt0
runs the same with npt=0."""

from vmtest import main
from pagetype import set_on_612

main(lambda: set_on_612(1, 540))
