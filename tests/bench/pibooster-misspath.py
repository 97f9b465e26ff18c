#!/usr/bin/env python3
"""The instructions a PiBooster cache miss adds to a page-table allocation,
counted in pibooster.ko's disassembly (objdump), as the paper counts them
(section 4.2: "the function invocation, the stack adjustments and the
checking logic ... less than 20 instructions").

Two parts, each the shortest path through a control-flow graph built from
`objdump -dr`:

- in the allocating function (the one that calls pib_pop): the shortest
  path from its entry to the page allocator's call that goes through the
  call of pib_pop, minus the shortest one that does not (the cache-off
  path, which is the coarse path PiBooster falls back to);
- in pib_pop: the shortest path from its entry to a return that calls
  nothing (the empty level, seen without the lock).

A figure, not a verdict: make bench prints it with the instructions it
counted.  Usage: pibooster-misspath.py [pibooster.ko]"""

import heapq
import os
import re
import subprocess
import sys

KO = os.path.join(os.environ.get("SIVSHM_BUILDDIR", "."),
                  "guest-modules", "pibooster", "pibooster.ko")
POP = "pib_pop"
ALLOC = ("alloc_pages", "__alloc_pages")
RETURN_THUNK = "__x86_return_thunk"

FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
INSN = re.compile(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$")
RELOC = re.compile(r"^\s+([0-9a-f]+): (R_X86_64_\w+)\s+([^\s+-]+)")
TARGET = re.compile(r"^([0-9a-f]+) <([^>+]+)(?:\+0x([0-9a-f]+))?>")


class Insn:
    def __init__(self, addr, mnem, ops):
        self.addr, self.mnem, self.ops = addr, mnem, ops
        self.sym = None		# what a relocation in it names
        self.next = None

    def target(self):
        """(symbol, address) a call or jump goes to."""
        if self.sym:
            return self.sym, None
        m = TARGET.match(self.ops)
        if not m:
            return None, None	# indirect
        return m.group(2), int(m.group(1), 16)

    def __str__(self):
        return "%6x  %-6s %s%s" % (self.addr, self.mnem, self.ops,
                                   "  [%s]" % self.sym if self.sym else "")


def disassemble(ko):
    out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", ko],
                         check=True, capture_output=True, text=True).stdout
    funcs, cur, last = {}, None, None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            cur = funcs.setdefault(m.group(2), [])
            last = None
            continue
        m = RELOC.match(line)
        if m and last is not None:
            last.sym = m.group(3)
            continue
        m = INSN.match(line)
        if m and cur is not None:
            insn = Insn(int(m.group(1), 16), m.group(2), m.group(3).strip())
            if last is not None:
                last.next = insn
            cur.append(insn)
            last = insn
    return funcs


def successors(insn, name, addrs):
    """The instructions that may follow @insn inside function @name."""
    m = insn.mnem
    if m.startswith("ret") or m in ("int3", "ud2"):
        return []
    if m.startswith("jmp"):
        sym, addr = insn.target()
        if sym == name and addr in addrs:
            return [addrs[addr]]
        return []		# a tail call, the return thunk, another section
    if m.startswith("j"):		# conditional
        sym, addr = insn.target()
        out = [insn.next] if insn.next else []
        if sym == name and addr in addrs:
            out.append(addrs[addr])
        return out
    return [insn.next] if insn.next else []


def shortest(name, insns, start, goal, avoid=None):
    """The fewest instructions from @start to @goal (both counted), not
    through @avoid: (count, path) or None."""
    addrs = {i.addr: i for i in insns}
    queue = [(1, start.addr, [start])]
    seen = set()
    while queue:
        n, addr, path = heapq.heappop(queue)
        insn = addrs[addr]
        if goal(insn):
            return n, path
        if addr in seen:
            continue
        seen.add(addr)
        for s in successors(insn, name, addrs):
            if s is not None and s is not avoid and s.addr not in seen:
                heapq.heappush(queue, (n + 1, s.addr, path + [s]))
    return None


def is_call_to(insn, names):
    return insn.mnem.startswith("call") and insn.target()[0] in names


def is_return(insn):
    return insn.mnem.startswith("ret") or (
        insn.mnem.startswith("jmp") and insn.target()[0] == RETURN_THUNK)


def main():
    ko = sys.argv[1] if len(sys.argv) > 1 else KO
    funcs = disassemble(ko)
    if POP not in funcs:
        sys.exit("%s: no out-of-line %s" % (ko, POP))
    callers = [f for f, ins in funcs.items()
               if any(is_call_to(i, (POP,)) for i in ins) and
               any(is_call_to(i, ALLOC) for i in ins)]
    if len(callers) != 1:
        sys.exit("%s: %d functions both call %s and allocate: %s"
                 % (ko, len(callers), POP, callers))
    name = callers[0]
    ins = funcs[name]
    call_pop = next(i for i in ins if is_call_to(i, (POP,)))
    at_alloc = lambda i: is_call_to(i, ALLOC)
    through = shortest(name, ins, ins[0], lambda i: i is call_pop)
    after = shortest(name, ins, call_pop.next, at_alloc)
    direct = shortest(name, ins, ins[0], at_alloc, avoid=call_pop)
    if not (through and after and direct):
        sys.exit("%s: no path to the allocator's call in %s" % (ko, name))
    miss = through[1] + after[1]
    caller_extra = len(miss) - direct[0]

    pop = funcs[POP]
    # the empty level: no call but the ftrace entry, a nop at run time
    empty = shortest(POP, pop, pop[0], is_return)
    for i in empty[1]:
        if i.mnem.startswith("call") and i.target()[0] != "__fentry__":
            sys.exit("%s: %s's shortest return calls %s"
                     % (ko, POP, i.target()[0]))

    print("pibooster, miss path (%s, objdump -dr)" % os.path.basename(ko))
    print("  %s to the page allocator: %d instructions through %s, %d "
          "without (cache off)" % (name, len(miss), POP, direct[0]))
    print("  %s, on the miss path only:" % name)
    common = {i.addr for i in direct[1]}
    for i in miss:
        if i.addr not in common:
            print("    " + str(i))
    print("  %s, empty level:" % POP)
    for i in empty[1]:
        print("    " + str(i))
    print("| part | instructions |")
    print("|---|---|")
    print("| %s: the call, its argument, the test of its result, the "
          "miss count | %d |" % (name, caller_extra))
    print("| %s: entry (with the ftrace nop), the empty check, the return "
          "| %d |" % (POP, empty[0]))
    print("| miss path, extra | %d |" % (caller_extra + empty[0]))
    print("(the paper: under 20)")


main()
