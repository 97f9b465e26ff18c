#!/usr/bin/env python3
"""The guest modules as users install them: make dkms-source, dkms add and
dkms build against the fetched kernel's headers; the package's two
modules load in a guest: sivshm.ko binds the sivshm device, pibooster.ko
patches the kernel, runs a fork storm and unloads clean."""

import os
import shutil
import tempfile
from vmtest import Guest, boot, builddir, check, main
from dkms import dkms_build
from pibooster import HELPERS, STORM, check_unload


def test():
    tmp = tempfile.mkdtemp(prefix="dkms-")
    built = dkms_build("sivshm", "dkms-source", ["sivshm", "pibooster"], tmp)
    sock = os.path.join(tmp, "s.sock")
    r = boot(Guest("dkms-build", """
insmod /lib/modules/extra/sivshm.ko
test -c /dev/sivshm0
dmesg | grep 'sivshm0: id 0'
pib_load
storm2 -n 5
pib_unload
""", shell_libs=[HELPERS], modules=built, programs=[builddir(*STORM)],
        qemu_args=["-device", "sivshm,vm-id=0,shm=dkms%d,socket=%s,size=8M,"
                   "reducers=1" % (os.getpid(), sock)]), timeout=120)
    shutil.rmtree(tmp)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    check_unload(r.dmesg.decode(errors="replace"))
    print("dkms-built sivshm.ko bound the device: "
          + r.text().strip().splitlines()[0])
    print("dkms-built pibooster.ko ran a storm and unloaded clean")


main(test)
