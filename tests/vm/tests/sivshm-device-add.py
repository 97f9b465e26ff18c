#!/usr/bin/env python3
# runtests: cores 1
"""sivshm's realize and unplug over QMP on a running mapper VM.

Every way realize can fail after it has created something (a mapper whose
socket is taken or cannot be bound, a reducer nobody answers, a reducer the
mapper refuses) is tried 20 times with device_add: each fails with its own
message, QEMU lives on, and its descriptor count comes back to where it
was.  A second mapper is then hot-plugged, used by a host reducer and
unplugged (device_del, the guest ejecting it) three times while a guest
process holds it open and mapped: the process gets -ENODEV, EPOLLHUP and
SIGBUS, never a use after free, and QEMU keeps no descriptor.  The guest
then unloads and loads the driver three times.  Migration is refused with
the device's reason."""

import os
import subprocess
import time
from vmtest import Qmp, builddir, check, main
from sivshm import MODULE, Service, mapper_up, qemu_fds, wait_console

ROUNDS = 20
HOTPLUGS = 3


def fd_kinds(pid):
    """What @pid's descriptors are, counted by kind, for a failure."""
    kinds = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            k = os.readlink("/proc/%d/fd/%s" % (pid, fd)).split(":")[0]
        except OSError:
            continue
        kinds[k] = kinds.get(k, 0) + 1
    return kinds


def settle(pid, want):
    n = qemu_fds(pid)
    for _ in range(50):
        if n == want:
            break
        time.sleep(0.1)
        n = qemu_fds(pid)
    return n


def props(text):
    """Device properties as QMP's device_add types them."""
    out = {}
    for kv in text.split(","):
        k, v = kv.split("=", 1)
        if v in ("on", "off"):
            out[k] = v == "on"
        elif v.endswith("M") and v[:-1].isdigit():
            out[k] = int(v[:-1]) << 20
        elif v.isdigit():
            out[k] = int(v)
        else:
            out[k] = v
    return out


def hostile(sock, flood="0"):
    """sivshm-hostile joins as reducer 1, is refused the rest, leaves."""
    r = subprocess.run([builddir("tests", "vm", "host", "sivshm-hostile"),
                        sock, "3", "1", "1", "2", flood],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "sivshm-hostile on %s:\n%s%s"
          % (sock, r.stdout, r.stderr))


def test():
    poke = [builddir("tests", "vm", "guest", "sivshm-poke")]
    svc = Service("devadd", 3, size="8M")
    # The guest waits for the host reducer of the end, then for it to go.
    # Meanwhile a process holds each hot-plugged device open and mapped
    # across its unplug.  Then the driver is unloaded and loaded again.
    mapper = svc.guest(0, "echo guest-up\n"
                       "sivshm-poke unplug /dev/sivshm1 %d 600000 &\n"
                       "unplug=$!\n"
                       "sivshm-poke wait-peers 0x2 600000\n"
                       "sivshm-poke wait-peers 0x0 600000\n"
                       "wait $unplug\n"
                       "for i in 1 2 3; do\n"
                       "  rmmod sivshm\n"
                       "  insmod %s\n"
                       "  test -c /dev/sivshm0\n"
                       "done\n"
                       "sivshm-poke wait-peers 0x0 1000\n" % (HOTPLUGS, MODULE),
                       programs=poke)
    run = svc.start(mapper, [], qmp=True)[0]
    qmp = Qmp(run.qmp_path)
    mapper_up(svc, run)
    pid = run.proc.pid
    base = qemu_fds(pid)

    other = os.path.join(svc.d, "devadd-other.sock")
    # A reducer's realize waits for its mapper's answer: that mapper must
    # be another process.
    far = os.path.join(svc.d, "devadd-far.sock")
    host_mapper = subprocess.Popen(
        [builddir("tests", "vm", "host", "sivshm-mapper"), far, "3", "1",
         str(4 << 20)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    check(host_mapper.stdout.readline() == b"listening\n",
          "the host mapper did not start")
    failing = [
        ("a mapper on a socket in use", "cannot listen on",
         "vm-id=0,shm=x%d,socket=%s,size=4M,reducers=2" % (os.getpid(),
                                                           svc.sock)),
        ("a mapper on a socket it cannot bind", "cannot listen on",
         "vm-id=0,shm=y%d,socket=%s/none/s.sock,size=4M,reducers=2"
         % (os.getpid(), svc.d)),
        ("a reducer nobody answers", "could not join",
         "vm-id=1,shm=z,socket=%s,timeout=50" % other),
        ("a reducer the mapper refuses", "reducer id out of range",
         "vm-id=9,shm=z,socket=%s,timeout=2000" % far),
        ("a mapper without a dir for unlink=off", "needs a backing dir",
         "vm-id=0,shm=w,socket=%s,size=4M,reducers=2,unlink=off" % other),
    ]
    for what, msg, args in failing:
        for i in range(ROUNDS):
            r = qmp.cmd("device_add", error_ok=True, driver="sivshm",
                        id="bad%d" % i, **props(args))
            check("error" in r, "%s: device_add succeeded" % what)
            check(msg in r["error"]["desc"], "%s: %s" % (what,
                                                         r["error"]["desc"]))
        n = settle(pid, base)
        print("%s, %d times: \"%s\"; descriptors %d -> %d"
              % (what, ROUNDS, r["error"]["desc"], base, n))
        check(n == base, "%s left %d descriptors: %s"
              % (what, n - base, fd_kinds(pid)))
    qmp.cmd("query-status")
    host_mapper.stdin.close()
    host_mapper.wait(30)

    # A mapper hot-plugged, joined, and unplugged under an open file.
    for i in range(1, HOTPLUGS + 1):
        qmp.cmd("device_add", driver="sivshm", id="hot", **props(
            "vm-id=0,shm=hot%d,socket=%s,size=4M,reducers=3"
            % (os.getpid(), other)))
        hostile(other)
        wait_console(run, "unplug-ready %d" % i)
        qmp.cmd("device_del", id="hot")
        qmp.wait_event("DEVICE_DELETED", device="hot")
        n = settle(pid, base)
        print("hot-plugged mapper %d: used and unplugged; descriptors "
              "%d -> %d" % (i, base, n))
        check(n == base, "unplug left %d descriptors: %s"
              % (n - base, fd_kinds(pid)))

    r = qmp.cmd("migrate", error_ok=True, uri="exec:cat >/dev/null")
    desc = r.get("error", {}).get("desc", "")
    print("migrate: " + desc)
    check("sivshm" in desc, "migration was not blocked: %s" % r)

    # The guest's own mapper sees a reducer come, then go.
    holder = subprocess.Popen(
        [builddir("tests", "vm", "host", "sivshm-hostile"), svc.sock, "3",
         "1", "1", "2", "0", "hold"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE)
    wait_console(run, "peers 0x2")
    holder.stdin.close()
    check(holder.wait(60) == 0, "sivshm-hostile failed on the VM's mapper")
    r = run.wait(300)
    check(r.outcome == "pass", r.describe() + "\n" + r.text())


main(test)
