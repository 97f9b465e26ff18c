#!/usr/bin/env python3
"""The guest driver as users install it: make dkms-source, dkms add and
dkms build against the fetched kernel's headers; the module DKMS built
loads in a guest and binds the sivshm device."""

import os
import shutil
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from vmtest import Guest, boot, check, main
from dkms import dkms_build


def test():
    tmp = tempfile.mkdtemp(prefix="dkms-")
    built = dkms_build("sivshm", "dkms-source", "sivshm", tmp)
    sock = os.path.join(tmp, "s.sock")
    r = boot(Guest("dkms-build", """
insmod /lib/modules/extra/sivshm.ko
test -c /dev/sivshm0
dmesg | grep 'sivshm0: id 0'
""", modules=[built], qemu_args=[
        "-device", "sivshm,vm-id=0,shm=dkms%d,socket=%s,size=8M,reducers=1"
        % (os.getpid(), sock)]), timeout=120)
    shutil.rmtree(tmp)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())
    print("dkms-built sivshm.ko bound the device: " + r.text().strip())


main(test)
