#!/usr/bin/env python3
"""pibooster-hotplug.py with the module's guest on Debian's 6.12 (bookworm-
backports, what Debian 13 ships) as level 2: memory hot-added after the load, its tables handed out
unpinned and validated by reference at the host."""

from pibooster import on_6_12

on_6_12("pibooster-hotplug")
