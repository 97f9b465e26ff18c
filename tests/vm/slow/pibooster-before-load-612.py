#!/usr/bin/env python3
"""pibooster-before-load.py with the module's guest on Debian's 6.12 (bookworm-
backports, what Debian 13 ships) as level 2: tables from before the load, linked by 6.12 under
tables the module pinned, validated by reference at the host."""

from pibooster import on_6_12

on_6_12("pibooster-before-load")
