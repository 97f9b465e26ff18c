"""QMP, QEMU's monitor protocol, on a unix socket: a client for tests and
benches, and a probe of whether a QEMU answers at all yet."""

import json
import socket
import time

from .result import HarnessError


def qmp_up(path):
    """True once a QEMU answers its QMP greeting on @path."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(2)
        s.connect(path)
        return b"QMP" in s.recv(4096)
    except OSError:
        return False
    finally:
        s.close()


class Qmp:
    """A QMP client on a QEMU's unix socket: cmd() returns the answer of one
    command (an exception for an error unless error_ok), events collects
    what QEMU said in between."""

    def __init__(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        while True:
            try:
                self.sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise HarnessError("no QMP socket at " + path)
                time.sleep(0.05)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.events = []
        self._read()                            # the greeting
        self.cmd("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise HarnessError("QEMU closed its QMP socket")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def send(self, name, /, **args):
        """Send a command without waiting: answer() takes its answer.
        @name is positional only: a command's arguments may have a "name"
        (set_link)."""
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")

    def cmd(self, name, /, error_ok=False, **args):
        self.send(name, **args)
        return self.answer(name, error_ok)

    def answer(self, name, error_ok=False):
        while True:
            r = self._read()
            if "event" in r:
                self.events.append(r)
                continue
            if "error" in r and not error_ok:
                raise HarnessError("QMP %s: %s" % (name, r["error"]["desc"]))
            return r

    def wait_event(self, name, timeout=60, **data):
        """Wait for event @name whose data has every item of @data."""
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e["event"] == name and all(
                        e.get("data", {}).get(k) == v for k, v in data.items()):
                    return self.events.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise HarnessError("no %s event in %d s" % (name, timeout))
            self.sock.settimeout(left)
            try:
                self.events.append(self._read())
            except socket.timeout:
                pass

    def close(self):
        self.sock.close()
