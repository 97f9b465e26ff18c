#!/usr/bin/env python3
"""SIVSHM under KVM: a mapper VM and a reducer VM run with -enable-kvm
inside a nested level 1, and their doorbells reach the guests through
irqfd, never through QEMU.

Each level-2 QEMU traces which path injected an interrupt.  Both must
attach their doorbell vector to KVM (sivshm_irqfd_on) and inject no
doorbell themselves (no sivshm_user_irq for vector 0; vector 1, the
peer-change interrupt, is always QEMU's), while the ping-pong sees every
interrupt exactly once, through the eventfd and through SIGUSR1.

Level 1 has one CPU: two KVM guests at once in a 2-CPU level 1 under
TCG kill level 1 (a triple fault, or a stack overflow in its NMI entry),
with plain guests as much as with these."""

import os
import re
import sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from vmtest import boot, builddir, check, main, nested, nested_result
from sivshm import Service, pingpong_scripts

ROUNDS = 2000


def test():
    pp = [builddir("tests", "vm", "guest", "sivshm-pingpong")]
    svc = Service("kvm", 1, size="8M")
    svc.sock = "/tmp/kvm.sock"          # a level-1 path
    guests = []
    for vm_id, script in enumerate(pingpong_scripts(ROUNDS)):
        name = "kvm-mapper" if vm_id == 0 else "kvm-reducer1"
        trace = ["-trace", "enable=sivshm_*", "-D", "/tmp/%s.trace" % name]
        guests.append(svc.guest(vm_id, script, programs=pp, memory=256,
                                smp=1, qemu_args=trace))
    l1 = nested("""
start_l2 kvm-mapper
start_l2 kvm-reducer1
wait_l2
""", guests, l2_collect=["/tmp/kvm-mapper.trace", "/tmp/kvm-reducer1.trace"],
        l2_timeout=500, smp=1)
    r1 = boot(l1, timeout=600)
    check(r1.outcome == "pass", "level 1: " + r1.describe())
    for g in guests:
        r2 = nested_result(r1, g.name)
        check(r2.outcome == "pass", "%s: %s\n%s" % (g.name, r2.describe(),
                                                    r2.text()))
        check("Hypervisor detected: KVM" in r2.console,
              g.name + " did not run under KVM")
        trace = r1.files.get(g.name + ".trace", b"").decode(errors="replace")
        on = re.findall(r"sivshm_irqfd_on vector 0 virq \d+", trace)
        by_qemu = re.findall(r"sivshm_user_irq vector 0\b", trace)
        check(on, "%s: vector 0 never went to irqfd:\n%s" % (g.name, trace))
        check(not by_qemu, "%s: QEMU injected %d doorbells itself"
              % (g.name, len(by_qemu)))
        print("%s: doorbell vector on irqfd, none injected by QEMU"
              % g.name)
    for line in nested_result(r1, "kvm-mapper").text().splitlines():
        print(line + " (level 2 under KVM, level 1 under TCG)")


main(test)
