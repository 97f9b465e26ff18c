"""What tests/runtests.py passes a VM test in its environment: where our
QEMU, the kernel, the build tree and the test's logs are."""

import os
import tempfile

from .result import HarnessError


def env_path(var, what):
    val = os.environ.get(var)
    if not val:
        raise HarnessError("%s is not set: %s (run through make check)"
                           % (var, what))
    return val


def builddir(*parts):
    return os.path.join(env_path("SIVSHM_BUILDDIR", "the build tree"),
                        *parts)


def logdir():
    d = os.environ.get("SIVSHM_LOGDIR")
    if not d:
        d = tempfile.mkdtemp(prefix="vmtest-")
    os.makedirs(d, exist_ok=True)
    return d


def log(msg):
    print("vmtest: " + msg, flush=True)
