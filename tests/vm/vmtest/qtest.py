"""QEMU's qtest protocol (-accel qtest), and on it what QEMU's libqos does
for a PCI device: a guest's reads and writes of memory, I/O ports and
configuration space, with no guest code."""


class Qtest:
    """The qtest protocol on a socket QEMU connected to; configuration
    space is that of the device in PCI slot @slot of bus 0."""

    def __init__(self, conn, slot):
        self.f = conn.makefile("rwb", buffering=0)
        self.conn = conn
        self.slot = slot

    def cmd(self, line):
        self.f.write(line.encode() + b"\n")
        while True:
            r = self.f.readline().decode().split()
            if not r:
                raise RuntimeError("qtest: QEMU hung up on %r" % line)
            if r[0] == "IRQ":
                continue
            if r[0] != "OK":
                raise RuntimeError("qtest: %r: %s" % (line, " ".join(r)))
            return int(r[1], 0) if len(r) > 1 else None

    def readl(self, addr):
        return self.cmd("readl 0x%x" % addr)

    def writel(self, addr, val):
        self.cmd("writel 0x%x 0x%x" % (addr, val))

    def cfg_read(self, reg):
        self.cmd("outl 0xcf8 0x%x" % (0x80000000 | self.slot << 11 | reg))
        return self.cmd("inl 0xcfc")

    def cfg_write(self, reg, val):
        self.cmd("outl 0xcf8 0x%x" % (0x80000000 | self.slot << 11 | reg))
        self.cmd("outl 0xcfc 0x%x" % val)


def assign_bars(qt):
    """What firmware would do for the device: give every memory BAR an
    address, enable memory decoding.  Returns {bar: address}."""
    addr32, addr64, bars, bar = 0xe0000000, 1 << 33, {}, 0
    while bar < 6:
        reg = 0x10 + 4 * bar
        qt.cfg_write(reg, 0xffffffff)
        mask = qt.cfg_read(reg)
        is64 = (mask & 0x6) == 0x4
        if is64:
            qt.cfg_write(reg + 4, 0xffffffff)
            mask |= qt.cfg_read(reg + 4) << 32
        if mask & 1 or not mask & ~0xf:
            qt.cfg_write(reg, 0)
            bar += 2 if is64 else 1
            continue
        size = ((~(mask & ~0xf)) & ((1 << (64 if is64 else 32)) - 1)) + 1
        if is64:
            addr64 = (addr64 + size - 1) & ~(size - 1)
            a, addr64 = addr64, addr64 + size
            qt.cfg_write(reg + 4, a >> 32)
        else:
            addr32 = (addr32 + size - 1) & ~(size - 1)
            a, addr32 = addr32, addr32 + size
        qt.cfg_write(reg, a & 0xffffffff)
        bars[bar] = a
        bar += 2 if is64 else 1
    qt.cfg_write(0x04, qt.cfg_read(0x04) | 0x2)
    return bars


def msix_enable(qt, bars):
    """Enable MSI-X with every vector masked (as after reset); return the
    addresses of the table and of the pending-bit array."""
    cap = qt.cfg_read(0x34) & 0xfc
    while cap:
        hdr = qt.cfg_read(cap)
        if hdr & 0xff == 0x11:
            qt.cfg_write(cap, hdr | 1 << 31)   # message control: enable
            table, pba = qt.cfg_read(cap + 4), qt.cfg_read(cap + 8)
            return bars[table & 7] + (table & ~7), bars[pba & 7] + (pba & ~7)
        cap = (hdr >> 8) & 0xfc
    raise RuntimeError("the device has no MSI-X capability")
