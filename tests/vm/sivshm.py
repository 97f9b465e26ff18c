"""Helpers for SIVSHM VM tests: a mapper VM and reducer VMs wired through
the sivshm device, with sivshm.ko and the static charcount programs."""

import os

from vmtest import Guest, Running, builddir, logdir

MODULE = "/lib/modules/extra/sivshm.ko"


def module():
    return builddir("guest-modules", "sivshm", "sivshm.ko")


def programs():
    return [builddir("tests", "vm", "guest", "charcount-mapper"),
            builddir("tests", "vm", "guest", "charcount-reducer")]


class Service:
    """One mapper VM and reducer VMs; start() boots the mapper first."""

    def __init__(self, name, nreducers, size="64M", vectors=1, extra=""):
        self.d = logdir()
        self.name = name
        self.shm = "%s-%d" % (name, os.getpid())
        self.sock = os.path.join(self.d, name + ".sock")
        self.nreducers = nreducers
        self.size = size
        self.vectors = vectors
        self.extra = extra

    def device(self, vm_id):
        dev = "sivshm,vm-id=%d,shm=%s,socket=%s,vectors=%d" % (
            vm_id, self.shm, self.sock, self.vectors)
        if vm_id == 0:
            dev += ",size=%s,reducers=%d" % (self.size, self.nreducers)
        return ["-device", dev + self.extra]

    def guest(self, vm_id, script, **kw):
        name = "%s-%s" % (self.name, "mapper" if vm_id == 0
                          else "reducer%d" % vm_id)
        setup = "insmod %s\ntest -c /dev/sivshm0\n" % MODULE
        return Guest(name, setup + script, modules=[module()],
                     programs=programs() + kw.pop("programs", []),
                     qemu_args=self.device(vm_id) + kw.pop("qemu_args", []),
                     **kw)

    def start(self, mapper, reducers):
        """Boot the mapper, then the reducers; returns the Running list."""
        runs = [Running(mapper, self.d)]
        runs += [Running(r, self.d) for r in reducers]
        return runs
