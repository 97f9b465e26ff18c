#!/usr/bin/env python3
"""Every number the docs state for one of the project's constants is the
number in the code.

A constant is stated as `NAME (value)`, `NAME = value` or in a table row
`| NAME | value |` (markdown, reST and man page markup are stripped
first).  Each NAME defined in the project's headers, as a macro or an
enumerator, is evaluated by the C compiler and compared.  A doc that
states another value fails the test, naming the file and line.

Usage: doc-constants.py [SRCDIR]  (default: the tree it is in)
"""

import glob
import os
import re
import subprocess
import sys
import tempfile

HEADERS = ["libsivshm/protocol/geometry.h", "libsivshm/protocol/proto.h",
           "libsivshm/protocol/cred.h", "libsivshm/protocol/fds.h",
           "libsivshm/protocol/server.h", "libsivshm/protocol/client.h",
           "libsivshm/include/sivshm.h",
           "include/sivshm-regs.h", "include/pagetype-regs.h",
           "include/uapi/linux/kvm_pagetype.h",
           "libsivshm/rdma/wire.h", "libsivshm/rdma/conn.h",
           "libsivshm/rdma/service.h"]
DOCS = ["README.md", "docs/*.md", "libsivshm/man/*.[37]",
        "qemu-sivshm/overlay/docs/specs/*.rst"]
NAME = r"([A-Z][A-Z0-9]*_[A-Z0-9_]+)"
# 64, 0x40, 2^40, 64 x 512, 1 TiB
VALUE = (r"(0x[0-9a-fA-F]+|\d+\^\d+|\d+\s*[x×]\s*\d+|"
         r"\d+\s*[KMGT]iB|\d+)(?![\d.])")
STATED = [re.compile(r"\b" + NAME + r"\s*\(\s*" + VALUE),
          re.compile(r"\b" + NAME + r"\s*=\s*" + VALUE),
          re.compile(r"^\|\s*" + NAME + r"\s*\|\s*" + VALUE)]
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def number(v):
    if "^" in v:
        b, e = v.split("^")
        return int(b) ** int(e)
    m = re.match(r"(\d+)\s*[x×]\s*(\d+)$", v)
    if m:
        return int(m.group(1)) * int(m.group(2))
    m = re.match(r"(\d+)\s*([KMGT]iB)$", v)
    if m:
        return int(m.group(1)) * UNITS[m.group(2)]
    return int(v, 0)


def plain(line):
    """A doc line without its markup."""
    line = re.sub(r"\\f[BIRP]|\\f\(..|`|\*\*", "", line)
    line = re.sub(r"^\.(B|BR|I|IR|RB|IB)\s+", "", line)
    return line.replace("\\-", "-")


def stated(src):
    """(path, line number, name, value) for every stated constant."""
    out = []
    for pat in DOCS:
        for path in sorted(glob.glob(os.path.join(src, pat))):
            with open(path, encoding="utf-8") as f:
                lines = [plain(l.rstrip("\n")) for l in f]
            for i, line in enumerate(lines):
                # A man page puts the value on the next line at times.
                text = line + " " + (lines[i + 1] if i + 1 < len(lines)
                                     else "")
                for rx in STATED:
                    for m in rx.finditer(text):
                        if m.start() < len(line):
                            out.append((os.path.relpath(path, src), i + 1,
                                        m.group(1), number(m.group(2))))
    return out


def known_names(src):
    """Macros and enumerators the project's headers define."""
    names = set()
    for h in HEADERS:
        with open(os.path.join(src, h)) as f:
            text = f.read()
        names |= set(re.findall(r"#define\s+" + NAME + r"\s", text))
        for body in re.findall(r"enum\s+\w+\s*\{(.*?)\}", text, re.S):
            names |= set(re.findall(r"\b" + NAME + r"\s*[=,\n]", body))
    return names


def values(src, names):
    """Evaluate @names with the C compiler."""
    with tempfile.TemporaryDirectory() as d:
        c = os.path.join(d, "v.c")
        with open(c, "w") as f:
            f.write("#include <stdio.h>\n#include <stdint.h>\n")
            for h in HEADERS:
                f.write('#include "%s"\n' % os.path.join(src, h))
            f.write("int main(void)\n{\n")
            for n in sorted(names):
                f.write('\tprintf("%%s %%llu\\n", "%s", '
                        '(unsigned long long)(%s));\n' % (n, n))
            f.write("\treturn 0;\n}\n")
        exe = os.path.join(d, "v")
        subprocess.run(["cc", "-D_GNU_SOURCE", "-I" + os.path.join(src, "include"),
                        "-I" + os.path.join(src, "libsivshm", "protocol"),
                        "-I" + os.path.join(src, "libsivshm", "include"),
                        "-o", exe, c], check=True)
        out = subprocess.run([exe], check=True, capture_output=True,
                             text=True).stdout
    return {n: int(v) for n, v in (l.split() for l in out.splitlines())}


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(__file__), "..", ".."))
    claims = [c for c in stated(src) if c[2] in known_names(src)]
    vals = values(src, {c[2] for c in claims})
    bad = [c for c in claims if vals[c[2]] != c[3]]
    for path, line, name, value in bad:
        print("%s:%d: %s stated as %d, the code says %d"
              % (path, line, name, value, vals[name]))
    print("%d statements of %d constants checked, %d wrong"
          % (len(claims), len(vals), len(bad)))
    return 1 if bad else 0


sys.exit(main())
