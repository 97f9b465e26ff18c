#!/usr/bin/env python3
# runtests: cores 1
"""pibooster-kexec.py with the module's guest on Debian's 6.12 (bookworm-
backports, what Debian 13 ships) as level 2: kexec into the same 6.12 kernel, the host clean before the
second kernel loads the module again."""

from pibooster import on_6_12

on_6_12("pibooster-kexec")
