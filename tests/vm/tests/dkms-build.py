#!/usr/bin/env python3
# runtests: cores 1
"""The guest modules as users install them, on both kernels they are built
for: make dkms-source, dkms add and dkms build against the headers of the
fetched 6.1 kernel and of bookworm-backports' 6.12; on each, the package's
two modules load in a guest booted on that kernel: sivshm.ko binds the
sivshm device, pibooster.ko patches the kernel, runs a fork storm and
unloads clean."""

import os
import shutil
import tempfile
from vmtest import Guest, Kernel, boot, builddir, check, main
from dkms import dkms_build
from pibooster import HELPERS, STORM, check_unload

SCRIPT = """
uname -r
insmod /lib/modules/extra/sivshm.ko
test -c /dev/sivshm0
dmesg | grep 'sivshm0: id 0'
pib_load
storm2 -n 5
pib_unload
"""


def on(kernel, tmp):
    built = dkms_build("sivshm", "dkms-source", ["sivshm", "pibooster"], tmp,
                       kernel=kernel)
    sock = os.path.join(tmp, "s.sock")
    # A stale int3 (vmtest.stale_int3()) is tried again: 6.12 booting on
    # two TCG vCPUs can trap on one the kernel had patched away.
    r = boot(Guest("dkms-build-" + ".".join(kernel.kver.split(".")[:2]),
                   SCRIPT, shell_libs=[HELPERS], modules=built,
                   programs=[builddir(*STORM)], kernel=kernel,
                   qemu_args=["-device", "sivshm,vm-id=0,shm=dkms%d,"
                              "socket=%s,size=8M,reducers=1"
                              % (os.getpid(), sock)]), timeout=120,
             emulator_retries=1)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    lines = r.text().strip().splitlines()
    check(lines[0] == kernel.kver, "the guest ran %s, not %s"
          % (lines[0], kernel.kver))
    check_unload(r.dmesg.decode(errors="replace"))
    print("on %s: dkms-built sivshm.ko bound the device: %s"
          % (kernel.kver, lines[1]))
    print("on %s: dkms-built pibooster.ko ran a storm and unloaded clean"
          % kernel.kver)


def test():
    tmp = tempfile.mkdtemp(prefix="dkms-")
    try:
        for kernel in (Kernel(),
                       Kernel(os.environ["SIVSHM_KERNEL_BACKPORTS"])):
            on(kernel, tmp)
    finally:
        shutil.rmtree(tmp)


main(test)
