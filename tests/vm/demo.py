#!/usr/bin/env python3
"""The demo: boot the Debian kernel in our QEMU and show what it ran.

Until the SIVSHM device lands this boots one guest with an ivshmem-plain
device (the baseline sivshm is measured against), has it report its
kernel, CPU and PCI devices, and prints what came back over the result
channel.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmtest  # noqa: E402


def main():
    shm = "/dev/shm/sivshm-demo-%d" % os.getpid()
    with open(shm, "wb") as f:
        f.truncate(1 << 20)
    try:
        guest = vmtest.Guest("demo", r"""
echo "guest kernel: $(uname -r)"
echo "guest CPUs:   $(grep -c ^processor /proc/cpuinfo)"
echo "guest PCI devices (vendor:device):"
for d in /sys/bus/pci/devices/*; do
	echo "  ${d##*/} $(cat $d/vendor):$(cat $d/device)"
done
""", qemu_args=["-object", "memory-backend-file,id=shm,share=on,size=1M,"
                "mem-path=" + shm, "-device", "ivshmem-plain,memdev=shm"])
        d = os.path.join(os.environ.get("SIVSHM_BUILDDIR", "."), "demo-logs")
        os.environ.setdefault("SIVSHM_LOGDIR", d)
        r = vmtest.boot(guest, timeout=180)
    finally:
        os.unlink(shm)
    sys.stdout.write(r.text())
    print("demo: %s; logs in %s" % (r.describe(), os.environ["SIVSHM_LOGDIR"]))
    return 0 if r.outcome == "pass" else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except vmtest.HarnessError as e:
        print("demo: %s" % e)
        sys.exit(1)
