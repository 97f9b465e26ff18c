"""Level-1 hosts for kvm_pagetype's tests.

A level-1 guest (TCG, -cpu max, so SVM is there) loads kvm and kvm_amd,
then kvm_pagetype.ko, and runs KVM-selftests-style programs from
tests/vm/kvm/ that create their own VMs: no level-2 kernel boots.  One CPU,
as the nested limits in docs/testing.md ask."""

import os

from vmtest import Guest, builddir

# Reload kvm_amd with other parameters: reload_kvm_amd npt=1
SCRIPT_HEAD = r"""
reload_kvm_amd() {
	rmmod kvm_amd
	insmod "$(find /lib/modules/$(uname -r) -name 'kvm-amd.ko*')" "$@"
}
mount -t debugfs none /sys/kernel/debug
insmod /lib/modules/extra/kvm_pagetype.ko
test -c /dev/kvm-pagetype
"""


def host(name, script, programs=(), npt=0, **opts):
    """A level-1 guest with kvm_amd npt=<npt> and kvm_pagetype loaded."""
    progs = [builddir("tests", "vm", "kvm", p) for p in programs]
    return Guest(name, SCRIPT_HEAD + script,
                 kmods=["kvm", "kvm_amd"], kmod_opts={"kvm_amd": "npt=%d" % npt},
                 modules=[builddir("kvm-pagetype", "kvm_pagetype.ko")],
                 programs=progs, smp=1, memory=1024, **opts)
