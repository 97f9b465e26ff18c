#!/usr/bin/env python3
# runtests: cores 1.5
"""pibooster-storm.py with the module's guest on Debian's 6.12 (bookworm-
backports, what Debian 13 ships): fork storms in every cache mode, the counts balanced,
memory back after unload."""

from pibooster import on_6_12

on_6_12("pibooster-storm")
