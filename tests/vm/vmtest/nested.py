"""Nested guests: a level-1 guest that boots level-2 guests with our QEMU
and -enable-kvm, and the level-2 Results it carries back."""

from .env import env_path
from .guest import Guest
from .qemu import firmware_files, shared_libraries
from .result import KVM_RUN_FAILED, HarnessError, Result

# Level 2 inside a TCG level 1: TCG's -cpu max reports XSAVE state sizes
# that disagree with the components it enables, and a 6.1 kernel booted on
# -cpu host there WARNs in fpu__init_system_xstate.  Level 2 goes without
# XSAVE (and the AVX family that needs it).
NESTED_ACCEL = ("-accel", "kvm", "-cpu", "host,-xsave")


def nested(l1_script, l2, l1_kmods=(), l1_args=(), l1_machine="q35",
           l1_memory=2048, l2_timeout=180, l2_collect=(), **l1_opts):
    """A level-1 guest that boots level-2 guests with -enable-kvm under our
    QEMU.

    l2 is a Guest or a list of them.  Level 1 carries our QEMU, its shared
    libraries and firmware, and each level-2 guest's kernel and initramfs;
    l1_script runs with these defined:
        run_l2 [NAME]     boot NAME (default: the first) and wait for it
        start_l2 NAME     boot NAME in the background
        wait_l2           wait for every guest start_l2 booted
        wait_l2_console NAME PATTERN
                          wait until NAME's console shows PATTERN; fails
                          when NAME ended without it
    each bounded by l2_timeout seconds of level 1's clock.  A level-2
    guest's channel and console come back as file:NAME.channel and
    file:NAME.console, and the level-1 files in l2_collect (the level-2
    QEMUs' logs, say) as file:<basename>.  Check the outcome with
    nested_result().  A level 1 that fails through TCG's nested SVM can be
    tried again: boot()'s emulator_retries.
    """
    l2s = list(l2) if isinstance(l2, (list, tuple)) else [l2]
    qemu = env_path("SIVSHM_QEMU", "our qemu-system-x86_64")
    files = {}
    for lib in shared_libraries(qemu):
        files[lib] = lib
    files["/usr/bin/qemu-system-x86_64"] = qemu
    for name, src in firmware_files().items():
        files["/usr/share/qemu/" + name] = src
    files["/l2/vmlinuz"] = l2s[0].kernel.vmlinuz
    collect = []
    for g in l2s:
        if g.kernel.vmlinuz != l2s[0].kernel.vmlinuz:
            raise HarnessError("level-2 guests must share one kernel")
        # Built straight into level 1's root as that is staged.
        files["/l2/%s.cpio" % g.name] = g.build_initramfs
        argv = g.qemu_argv("/usr/bin/qemu-system-x86_64", "/l2/vmlinuz",
                           "/l2/%s.cpio" % g.name, "/tmp/%s.channel" % g.name,
                           "/tmp/%s.console" % g.name, NESTED_ACCEL)
        files["/l2/%s.sh" % g.name] = ("exec " + " ".join(
            "'%s'" % a.replace("'", "'\\''") for a in argv) + "\n").encode()
        collect += ["/tmp/%s.%s" % (g.name, what) for what in
                    ("channel", "console", "stderr", "status")]
    script = (r"""# Seconds since level 1 booted, from the clock: a loop's own ticks
# under TCG run slower than they say.
now() { local t _; read t _ </proc/uptime; echo ${t%%.*}; }
run_l2() {
	n=${1:-%(first)s}
	sh "/l2/$n.sh" 2> "/tmp/$n.stderr" &
	pid=$!
	echo "vmtest: level 2 $n started" >/dev/kmsg
	local end
	end=$(($(now) + %(t)d))
	while kill -0 $pid 2>/dev/null; do
		# A guest KVM refuses to run is stopped, not ended, by QEMU.
		if grep -q "%(failed)s" "/tmp/$n.stderr"; then
			echo "vmtest: level 2 $n: KVM_RUN failed"
			kill -9 $pid 2>/dev/null || true
			break
		fi
		if [ $(now) -ge $end ]; then
			echo "vmtest: level 2 $n: no end within %(t)d s"
			kill -9 $pid 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	status=0
	wait $pid || status=$?
	echo $status > "/tmp/$n.status"
	echo "vmtest: level 2 $n ended: $status" >/dev/kmsg
	[ $status -eq 0 ] || echo "vmtest: level 2 $n QEMU exited with $status"
	cat "/tmp/$n.stderr"
}
l2_pids=
start_l2() {
	run_l2 "$1" &
	l2_pids="$l2_pids $!"
}
wait_l2() {
	for p in $l2_pids; do wait $p; done
	l2_pids=
}
wait_l2_console() {
	local end
	end=$(($(now) + %(t)d))
	until grep -q "$2" "/tmp/$1.console" 2>/dev/null; do
		if [ -e "/tmp/$1.status" ] || [ $(now) -ge $end ]; then
			grep -q "$2" "/tmp/$1.console" && return 0
			echo "vmtest: level 2 $1: no '$2' on its console"
			return 1
		fi
		sleep 0.2
	done
}
""" % {"t": l2_timeout, "first": l2s[0].name,
       "failed": KVM_RUN_FAILED}) + l1_script
    l1 = Guest(l2s[0].name + "-l1", script,
               kmods=["kvm", "kvm_amd"] + list(l1_kmods), files=files,
               collect=collect + list(l2_collect), qemu_args=l1_args,
               machine=l1_machine, memory=l1_memory, **l1_opts)
    return l1


def nested_result(l1_result, l2_name):
    """The level-2 Result carried back inside a level-1 Result: its channel,
    console, QEMU's stderr and exit status.  A level-2 guest whose KVM_RUN
    failed (killed on purpose by a host module) has outcome "killed"."""
    files = l1_result.files
    status = files.get(l2_name + ".status", b"").strip().decode()
    return Result(l2_name, files.get(l2_name + ".channel", b""),
                  files.get(l2_name + ".console", b""), False,
                  int(status) if status.isdigit() else "unknown",
                  files.get(l2_name + ".stderr", b""))
