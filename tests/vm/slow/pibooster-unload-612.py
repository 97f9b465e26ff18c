#!/usr/bin/env python3
"""pibooster-unload.py with the module's guest on Debian's 6.12 (bookworm-
backports, what Debian 13 ships): unloaded mid-storm, every pin and conversion undone."""

from pibooster import on_6_12

on_6_12("pibooster-unload")
