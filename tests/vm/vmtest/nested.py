"""Nested guests: a level-1 guest that boots level-2 guests with our QEMU
and -enable-kvm (the functions of tests/vm/guest/level1.sh), and the
level-2 Results it carries back."""

from .env import env_path
from .guest import Guest, guest_sh
from .qemu import firmware_files, shared_libraries
from .result import KVM_RUN_FAILED, L2_BOOT_STALL, HarnessError, Result

# Level 2 inside a TCG level 1: TCG's -cpu max reports XSAVE state sizes
# that disagree with the components it enables, and a 6.1 kernel booted on
# -cpu host there WARNs in fpu__init_system_xstate.  Level 2 goes without
# XSAVE (and the AVX family that needs it).
NESTED_CPU = "host,xsave=off"
NESTED_ACCEL = ("-accel", "kvm", "-cpu", NESTED_CPU)

# Level 2 takes level 1's TSC frequency and trusts its TSC, for when it has
# no kvmclock (level1.sh's VMTEST_TSC_KHZ says why); the marker becomes
# that variable in each /l2/NAME.sh.
TSC_KHZ = "@VMTEST_TSC_KHZ@"
L2_TSC = "tsc_early_khz=%s tsc=reliable" % TSC_KHZ


def sh_quote(arg):
    return "'%s'" % arg.replace("'", "'\\''")


def nested(l1_script, l2, l1_kmods=(), l1_args=(), l1_machine="q35",
           l1_memory=2048, l2_timeout=180, l2_collect=(), **l1_opts):
    """A level-1 guest that boots level-2 guests with -enable-kvm under our
    QEMU.

    l2 is a Guest or a list of them.  Level 1 carries our QEMU, its shared
    libraries and firmware, and each level-2 guest's kernel and initramfs;
    l1_script runs with the functions of tests/vm/guest/level1.sh defined:
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
        argv[argv.index("-append") + 1] += " " + L2_TSC
        script = "exec " + " ".join(sh_quote(a) for a in argv) + "\n"
        files["/l2/%s.sh" % g.name] = script.replace(
            TSC_KHZ, "'\"$VMTEST_TSC_KHZ\"'").encode()
        collect += ["/tmp/%s.%s" % (g.name, what) for what in
                    ("channel", "console", "stderr", "status")]
    env = {**l1_opts.pop("env", {}),
           "VMTEST_L2_TIMEOUT": str(l2_timeout),
           "VMTEST_L2_FIRST": l2s[0].name,
           "VMTEST_KVM_RUN_FAILED": KVM_RUN_FAILED,
           "VMTEST_L2_BOOT_STALL": L2_BOOT_STALL}
    l1 = Guest(l2s[0].name + "-l1", l1_script,
                 shell_libs=[guest_sh("level1.sh")] +
                 list(l1_opts.pop("shell_libs", [])), env=env,
                 kmods=["kvm", "kvm_amd"] + list(l1_kmods),
                 files={**files, **l1_opts.pop("files", {})},
                 collect=collect + list(l2_collect), qemu_args=l1_args,
                 machine=l1_machine, memory=l1_memory, **l1_opts)
    l1.level1 = True
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
