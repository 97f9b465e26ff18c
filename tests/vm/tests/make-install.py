#!/usr/bin/env python3
# runtests: cores 1
"""make install, as a user runs it (into a DESTDIR here): libsivshm with
its header, pkg-config file and man pages, the programs, our QEMU as
bin/qemu-system-x86_64-sivshm, the libvirt hook and generator, and both
DKMS source packages in src/ (nothing kbuild generated in them).  That installed QEMU boots a guest with the
sivshm device and finds its firmware itself, with no -L (libvirt passes
none); a program built against the installed library through pkg-config
runs a mapper and a reducer."""

import os
import shutil
import subprocess
import tempfile
from vmtest import Guest, Running, builddir, check, logdir, main

PROG = r"""
#include <stdio.h>
#include <sivshm.h>

int main(int argc, char **argv)
{
	struct sivshm_mapper_opts o = { .socket_path = argv[1], .name = "inst",
					.size = 1 << 20, .nreducers = 1,
					.nvectors = 1 };
	struct sivshm *m, *r;

	if (argc != 2 || sivshm_mapper_open(&m, &o) ||
	    sivshm_reducer_open(&r, argv[1], 1, 1, 0, 2000))
		return 1;
	*(int *)sivshm_slot(r, 1) = 42;
	printf("the mapper reads %d\n", *(int *)sivshm_slot(m, 1));
	sivshm_close(r);
	sivshm_close(m);
	return 0;
}
"""


def sh(*argv, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    check(p.returncode == 0, "%s:\n%s%s" % (" ".join(argv), p.stdout,
                                            p.stderr))
    return p.stdout


def test():
    dest = tempfile.mkdtemp(prefix="install-")
    sh("make", "-C", builddir(), "install", "DESTDIR=" + dest)
    prefix = dest + "/usr/local"
    with open(builddir("Makefile")) as f:
        version = next(ln.split()[2] for ln in f
                       if ln.startswith("VERSION = "))
    for f in ("bin/qemu-system-x86_64-sivshm", "bin/sivshm-run",
              "include/sivshm.h", "lib/pkgconfig/libsivshm.pc",
              "share/man/man3/sivshm_reducer_open_checked.3",
              "share/man/man7/libsivshm.7",
              "etc/libvirt/hooks/qemu.d/50-sivshm", "bin/sivshm-virt-xml",
              "share/man/man1/sivshm-virt-xml.1",
              "share/man/man8/sivshm-hook.8",
              "src/sivshm-%s/dkms.conf" % version,
              "src/sivshm-%s/include/sivshm-regs.h" % version,
              "src/sivshm-%s/pibooster/pt_rules.c" % version,
              "src/sivshm-%s/pibooster/include/uapi/linux/kvm_pagetype.h"
              % version,
              "src/kvm-pagetype-%s/dkms.conf" % version,
              "src/kvm-pagetype-%s/pt_rules.c" % version):
        check(os.path.exists(os.path.join(prefix, f)), f + " not installed")
    generated = [f for d in ("kvm-pagetype-%s" % version,
                             "sivshm-%s/pibooster" % version)
                 for f in os.listdir("%s/src/%s" % (prefix, d))
                 if f.endswith((".mod.c", ".o", ".ko"))]
    check(not generated, "build products in the DKMS source: %s" % generated)
    check(any(n.startswith("libsivshm.so") for n in
              os.listdir(prefix + "/lib")), "no libsivshm.so")

    # A program of the user's, through pkg-config.
    src = os.path.join(dest, "prog.c")
    with open(src, "w") as f:
        f.write(PROG)
    env = dict(os.environ, PKG_CONFIG_PATH=prefix + "/lib/pkgconfig")
    flags = sh("pkg-config", "--define-prefix", "--cflags", "--libs",
               "libsivshm", env=env).split()
    sh("cc", "-o", dest + "/prog", src, *flags)
    out = sh(dest + "/prog", dest + "/prog.sock",
             env=dict(os.environ, LD_LIBRARY_PATH=prefix + "/lib"))
    check("the mapper reads 42" in out, out)

    # The installed QEMU needs no -L (the harness passes none).
    d = logdir()
    r = Running(Guest("installed-qemu", "insmod /lib/modules/extra/sivshm.ko\n"
                      "test -c /dev/sivshm0\n",
                      modules=[builddir("guest-modules", "sivshm",
                                        "sivshm.ko")],
                      qemu_args=["-device", "sivshm,vm-id=0,shm=inst%d,"
                                 "socket=%s/s.sock,size=4M,reducers=1"
                                 % (os.getpid(), d)]),
                d, qemu=prefix + "/bin/qemu-system-x86_64-sivshm").wait(120)
    shutil.rmtree(dest)
    check(r.outcome == "pass", r.describe() + "\n" + r.stderr)
    print("installed under %s; the installed QEMU booted a guest without "
          "-L; a pkg-config build ran: %s" % ("/usr/local", out.strip()))


main(test)
