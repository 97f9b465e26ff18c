#!/usr/bin/env python3
# runtests: cores 1
"""SIVSHM under KVM: doorbells reach the guest through irqfd, never through
QEMU, in both roles.

Inside a nested level 1, a mapper VM runs with -enable-kvm against a
reducer that is a host process of level 1 (libsivshm's host backend),
then a reducer VM against a host-process mapper.  Each level-2 QEMU
traces which path injected an interrupt: it must attach its doorbell
vector to KVM (sivshm_irqfd_on) and inject no doorbell itself (no
sivshm_user_irq for vector 0; vector 1, the peer-change interrupt, is
always QEMU's), while the ping-pong sees every interrupt exactly once,
through the eventfd and through SIGUSR1.

One KVM guest at a time, with one vCPU, in a level 1 of one CPU: two at
once inside a TCG level 1 crash it, plain guests as much as ours.  Even so, TCG's emulation of
nested SVM under this interrupt load now and then kills or hangs level 1
itself, with its preempt count stuck in NMI context ("scheduling while
atomic ... 0x00110001").  Such a run says nothing of the code under test
and is tried again (boot()'s emulator_retries); any other failure fails
at once."""

import re
from vmtest import boot, builddir, check, main, nested, nested_result
from sivshm import Service, pingpong_scripts

ROUNDS = 200


def test():
    pp = [builddir("tests", "vm", "guest", "sivshm-pingpong")]
    guests, l1_script = [], ""
    for vm_id, script in enumerate(pingpong_scripts(ROUNDS)):
        role = "mapper" if vm_id == 0 else "reducer1"
        svc = Service("kvm", 1, size="8M")
        svc.sock = "/tmp/%s.sock" % role            # a level-1 path
        trace = ["-trace", "enable=sivshm_*", "-D", "/tmp/%s.trace" % role]
        guests.append(svc.guest(vm_id, script, programs=pp, memory=256,
                                smp=1, qemu_args=trace))
        # Its peer in level 1 runs both of the guest's runs (eventfd,
        # then SIGUSR1) on one connection.
        peer = ("reducer %d eventfd" % ROUNDS if vm_id == 0 else
                "mapper %d 1 eventfd" % ROUNDS)
        host = "sivshm-pingpong --host %s --run 0 --runs 2 %s" % (svc.sock,
                                                                  peer)
        if vm_id == 0:      # the mapper VM listens: boot it first
            l1_script += "start_l2 %s\n%s\nwait_l2\n" % (guests[-1].name,
                                                         host)
        else:               # the host mapper listens: start it first
            l1_script += ("%s > /tmp/host-mapper.out 2>&1 &\nhost=$!\n"
                          "run_l2 %s\nwait $host\ncat /tmp/host-mapper.out\n"
                          % (host, guests[-1].name))
    l1 = nested(l1_script, guests, programs=pp, l2_timeout=60, smp=1,
                l2_collect=["/tmp/mapper.trace", "/tmp/reducer1.trace"])
    r1 = boot(l1, timeout=120, emulator_retries=2)
    check(r1.outcome == "pass", "level 1: %s\n%s" % (r1.describe(),
                                                     r1.text()))
    for g, role in zip(guests, ("mapper", "reducer1")):
        r2 = nested_result(r1, g.name)
        check(r2.outcome == "pass", "%s: %s\n%s" % (g.name, r2.describe(),
                                                    r2.text()))
        check("Hypervisor detected: KVM" in r2.console,
              g.name + " did not run under KVM")
        trace = r1.files.get(role + ".trace", b"").decode(errors="replace")
        on = re.findall(r"sivshm_irqfd_on vector 0 virq \d+", trace)
        by_qemu = re.findall(r"sivshm_user_irq vector 0\b", trace)
        check(on, "%s: vector 0 never went to irqfd:\n%s" % (g.name, trace))
        check(not by_qemu, "%s: QEMU injected %d doorbells itself"
              % (g.name, len(by_qemu)))
        print("%s VM: doorbell vector on irqfd, none injected by QEMU"
              % role)
        for line in r2.text().splitlines():
            print("  %s (level 2 under KVM, level 1 under TCG)" % line)


main(test)
