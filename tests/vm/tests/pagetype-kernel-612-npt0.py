#!/usr/bin/env python3
# runtests: cores 1
"""pagetype-kernel-612 with kvm_amd npt=0 (shadow paging): the pagetype
programs against kvm_pagetype.ko built by DKMS, in a level 1 on the 6.12
of bookworm-backports."""

from vmtest import main
from pagetype import set_on_612

main(lambda: set_on_612(0, 540))
