"""Files for a process that runs as another user: a QEMU under setpriv,
libvirt's QEMU user.  Such a process opens its files with its own
credentials, so every directory above them must let it through, and the
checkout gives no such promise: a clone under /root (mode 0700 on Debian)
or a home is closed to every other user.

So nothing under the checkout or the build tree is handed to such a
process.  What it opens goes into a directory made for it under /tmp:

    /tmp/vmtest-<test>-XXXXXX/     root, 0711: others pass, cannot list
        <uid>.<gid>/               that user, 0700

Inputs it reads (our QEMU, the kernel) are taken where they are when that
user can reach them (the cache, through the build tree's links) and
copied in when not.  At exit the test's files left there (consoles,
result channels, command lines) are copied into its log directory and the
directory is removed.  Running(..., user=) refuses a log directory
outside it."""

import atexit
import os
import shutil
import stat
import tempfile

from .env import logdir
from .result import HarnessError

# World-traversable on every Linux host, wherever the checkout is.
SHARED_PARENT = "/tmp"
TOP_MODE = 0o711
USER_MODE = 0o700

_top = None             # this test's /tmp/vmtest-<test>-XXXXXX
_dirs = {}              # (uid, gid): UserDir


def user_can(uid, gid, path, how=os.R_OK):
    """Whether @uid:@gid, with no supplementary groups, can @how (os.R_OK,
    os.W_OK, os.X_OK) @path: asked of a child with those credentials, not
    worked out from modes (ACLs and mounts decide too)."""
    if (uid, gid) == (os.geteuid(), os.getegid()):
        return os.access(path, how, effective_ids=True)
    if os.geteuid() != 0:
        return False                # cannot ask: take it as no
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            ok = os.access(path, how)
        except BaseException:
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


class UserDir:
    """The directory of one test for what @uid:@gid opens; see the module's
    doc.  Make it with user_dir()."""

    def __init__(self, top, uid, gid):
        self.uid = uid
        self.gid = gid
        self.path = os.path.join(top, "%d.%d" % (uid, gid))
        os.mkdir(self.path, USER_MODE)
        os.chown(self.path, uid, gid)
        os.chmod(self.path, USER_MODE)
        self.inputs = {}            # path given to reach() or copy(): copy

    def setpriv(self):
        """The command that runs what follows it as this user."""
        return ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid,
                "--clear-groups"]

    def give(self, path):
        """@path, a file the harness made here, becomes the user's."""
        os.chown(path, self.uid, self.gid)
        return path

    def copy(self, path):
        """A copy of @path here, the user's: for an input the process may
        change (libvirt relabels a domain's kernel), or cannot reach."""
        if path not in self.inputs:
            dst = os.path.join(self.path, os.path.basename(path))
            if os.path.exists(dst):
                raise HarnessError("%s: a second input named %s"
                                   % (self.path, os.path.basename(path)))
            shutil.copy2(path, dst)
            self.inputs[path] = self.give(dst)
        return self.inputs[path]

    def reach(self, path, how=os.R_OK):
        """A path of @path's file that this user can @how: where its links
        lead when the user reaches that, else a copy here."""
        real = os.path.realpath(path)
        if not os.path.exists(real):
            raise HarnessError("%s is missing (not built?)" % path)
        if user_can(self.uid, self.gid, real, how):
            return real
        return self.copy(real)

    def keep_logs(self, dest):
        """Copy the files the test left here, not its inputs, to @dest."""
        inputs = set(self.inputs.values())
        os.makedirs(dest, exist_ok=True)
        for name in sorted(os.listdir(self.path)):
            p = os.path.join(self.path, name)
            if p not in inputs and stat.S_ISREG(os.lstat(p).st_mode):
                shutil.copy(p, os.path.join(dest, name))


def user_dir(uid, gid):
    """This test's directory for what @uid:@gid opens (one per user and
    group, made at the first call, removed at exit)."""
    global _top
    if os.geteuid() != 0 and (uid, gid) != (os.geteuid(), os.getegid()):
        raise HarnessError("a directory for uid %d gid %d needs root"
                           % (uid, gid))
    if (uid, gid) in _dirs:
        return _dirs[(uid, gid)]
    if not user_can(uid, gid, SHARED_PARENT, os.X_OK):
        raise HarnessError("uid %d cannot pass %s" % (uid, SHARED_PARENT))
    if _top is None:
        name = os.path.basename(os.environ.get("SIVSHM_LOGDIR", "")) or "vm"
        _top = tempfile.mkdtemp(prefix="vmtest-%s-" % name,
                                dir=SHARED_PARENT)
        os.chmod(_top, TOP_MODE)
    _dirs[(uid, gid)] = UserDir(_top, uid, gid)
    return _dirs[(uid, gid)]


@atexit.register
def remove_user_dirs():
    """Keep the logs of this test's user directories and remove them: at
    exit, once its guests are killed."""
    global _top
    if _top is None:
        return
    from .qemu import kill_guests
    kill_guests()                   # nothing writes here any more
    try:
        for d in _dirs.values():
            d.keep_logs(logdir())
    finally:
        shutil.rmtree(_top, ignore_errors=True)
        _top = None
        _dirs.clear()
