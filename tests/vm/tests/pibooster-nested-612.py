#!/usr/bin/env python3
# runtests: cores 1
"""pibooster-nested.py with the module's guest on Debian's 6.12 (bookworm-
backports, what Debian 13 ships) as level 2, against kvm_pagetype.ko
in a level 1 on 6.1."""

from pibooster import on_6_12

on_6_12("pibooster-nested")
