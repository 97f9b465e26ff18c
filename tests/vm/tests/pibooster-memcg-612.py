#!/usr/bin/env python3
# runtests: cores 1.5
"""pibooster-memcg.py with the module's guest on Debian's 6.12 (bookworm-
backports, what Debian 13 ships): cached frames charged to their memory cgroup, given back
by its reclaim through the shrinker."""

from pibooster import on_6_12

on_6_12("pibooster-memcg")
