"""Kernel-in-QEMU test harness.

A VM test is a small host program that describes one or more guests
(kernel, initramfs contents, QEMU arguments, a script to run inside),
boots them with this project's QEMU and asserts on what came back.

What comes back travels over a dedicated virtio-serial port, named
RESULT_PORT, as a sequence of frames (docs/testing.md):

    SVT1 <kind> <length>\\n<length bytes of payload>\\n

The guest's /init sends the test's output ("out"), the kernel log after the
test ("dmesg"), any files the test asked to collect ("file:<name>") and,
last, the script's exit status ("exit").  Anything else, a truncated frame
or no "exit" frame at all, means the guest was lost: it crashed, panicked,
hung or was killed at its timeout, and the test fails.  A kernel splat (BUG,
WARNING, Oops, lockdep, RCU stall, ...) on the console or in the dmesg frame
also fails the test.

Configuration comes from the environment, set by tests/runtests.py:

    SIVSHM_QEMU       our qemu-system-x86_64, the one under test
    SIVSHM_LEVEL0_QEMU  the QEMU that runs a level 1 carrying SIVSHM_QEMU
                      (nested()); SIVSHM_QEMU when unset
    SIVSHM_KERNEL     the fetched kernel (tests/vm/fetch-kernel.sh): KVER, root/
    SIVSHM_BUILDDIR   the build tree (modules, guest programs)
    SIVSHM_LOGDIR     where this test keeps its logs (consoles, channels)
    SIVSHM_ACCEL      kvm or tcg (probed once by the runner)
    SIVSHM_TEST_TIMEOUT  seconds the runner gives the whole test (0: none)

One job per module:

    result.py  frames, kernel splats, Result; check, skip and main
    env.py     the runner's environment: build tree, logs
    qemu.py    our QEMU on the host: accelerator, firmware, Running
    guest.py   Guest (initramfs, QEMU and kernel command lines), boot()
    nested.py  level-1 guests that boot level-2 guests
    qmp.py     a QMP client
    qtest.py   qtest and, on it, a PCI device's configuration (libqos)
    user.py    directories for a process that runs as another user

The shell the guests run is in tests/vm/guest/*.sh.
"""

from .env import builddir, env_path, log, logdir
from .guest import (CONSOLE_TAIL, Guest, Kernel, boot, guest_sh, module_name,
                    resolve_modules)
from .nested import NESTED_ACCEL, NESTED_CPU, nested, nested_result
from .qemu import (KVM_ACCEL, TCG_ACCEL, Running, firmware_files, host_accel,
                   kill_guests, shared_libraries)
from .qmp import Qmp, qmp_up
from .result import (FAIL, FRAME_MAGIC, KVM_RUN_FAILED, L2_BOOT_STALL, PASS,
                     RESULT_PORT, SKIP, FrameError, HarnessError, Result, check,
                     emulator_fault, encode_frame, find_splats, main,
                     parse_frames, skip, stale_int3)
from .user import UserDir, remove_user_dirs, user_can, user_dir

__all__ = [
    "builddir", "env_path", "log", "logdir",
    "CONSOLE_TAIL", "Guest", "Kernel", "boot", "guest_sh", "module_name",
    "resolve_modules",
    "NESTED_ACCEL", "NESTED_CPU", "nested", "nested_result",
    "KVM_ACCEL", "TCG_ACCEL", "Running", "firmware_files", "host_accel",
    "kill_guests", "shared_libraries",
    "Qmp", "qmp_up",
    "FAIL", "FRAME_MAGIC", "KVM_RUN_FAILED", "L2_BOOT_STALL", "PASS",
    "RESULT_PORT", "SKIP",
    "FrameError", "HarnessError", "Result", "check", "emulator_fault",
    "encode_frame", "find_splats", "main", "parse_frames", "skip",
    "stale_int3",
    "UserDir", "remove_user_dirs", "user_can", "user_dir",
]
