#!/usr/bin/env python3
# runtests: cores 0.5
# As pibooster-shrink.py: about a quarter of a core alone.
"""pibooster-shrink.py with the module's guest on Debian's 6.12 (bookworm-
backports, what Debian 13 ships): the cache's sizes, thresholds, the shrinker under memory pressure, a
poisoned cached frame, pins refused."""

from pibooster import on_6_12

on_6_12("pibooster-shrink")
