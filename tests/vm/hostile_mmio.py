#!/usr/bin/env python3
"""Random register writes from a hostile guest (tests/vm/checks/hostile-guest.sh).

    hostile_mmio.py BDF SEED COUNT doorbells|all

Maps the function's memory BARs through sysfs (resourceN) and stores COUNT random 32- and
64-bit values at random aligned offsets, with a read now and then:
  doorbells  the doorbell BAR (BAR 2) and BAR 0's interrupt control block: safe to do under
             a bound driver, which then has to recover;
  all        every register of every memory BAR, dev_cmd and its doorbell included, except
             the MSI-X table and PBA (QEMU's, not the device's; a random MSI address would
             make the interrupt a store into random guest memory).
Prints one line: how many stores went to which BAR.
"""
import ctypes
import mmap
import os
import random
import struct
import sys

IONIC_INTR_CTRL = (0x2000, 0x8000)


def msix_ranges(dev):
    """(bar, start, end) of the MSI-X table and PBA, from the capability list."""
    with open(os.path.join(dev, "config"), "rb") as f:
        cfg = f.read(256)
    out = []
    pos = cfg[0x34] & 0xFC
    seen = set()
    while pos and pos not in seen and pos + 12 <= len(cfg):
        seen.add(pos)
        if cfg[pos] == 0x11:
            ctrl = struct.unpack_from("<H", cfg, pos + 2)[0]
            table, pba = struct.unpack_from("<II", cfg, pos + 4)
            n = (ctrl & 0x7FF) + 1
            out.append((table & 7, table & ~7, (table & ~7) + 16 * n))
            out.append((pba & 7, pba & ~7, (pba & ~7) + 8 * ((n + 63) // 64)))
        pos = cfg[pos + 1] & 0xFC
    return out


def main():
    bdf, seed, count, mode = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3]), sys.argv[4]
    dev = "/sys/bus/pci/devices/" + bdf
    rng = random.Random(seed)
    bars = {}
    with open(os.path.join(dev, "resource")) as f:
        for i, line in enumerate(f.read().split("\n")[:6]):
            start, end, flags = (int(x, 16) for x in line.split())
            if end > start and flags & 0x200:  # IORESOURCE_MEM
                fd = os.open(os.path.join(dev, "resource%d" % i), os.O_RDWR | os.O_SYNC)
                bars[i] = mmap.mmap(fd, end - start + 1, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
                os.close(fd)
    avoid = msix_ranges(dev)
    if mode == "doorbells":
        targets = [(2, 0, len(bars[2]))] if 2 in bars else []
        targets.append((0, IONIC_INTR_CTRL[0], IONIC_INTR_CTRL[1]))
    else:
        targets = [(i, 0, len(m)) for i, m in bars.items()]
    stores = {}
    for _ in range(count):
        bar, lo, hi = rng.choice(targets)
        width = rng.choice((4, 8))
        off = lo + rng.randrange((hi - lo) // width) * width
        if any(b == bar and s <= off < e for b, s, e in avoid):
            continue
        value = rng.getrandbits(8 * width)
        if rng.random() < 0.05:
            value = 0  # zeros and all-ones are the values drivers and devices trip on
        elif rng.random() < 0.05:
            value = (1 << (8 * width)) - 1
        ctype = ctypes.c_uint32 if width == 4 else ctypes.c_uint64
        cell = ctype.from_buffer(bars[bar], off)
        if rng.random() < 0.1:
            _ = cell.value
        cell.value = value
        del cell
        stores[bar] = stores.get(bar, 0) + 1
    for m in bars.values():
        m.close()
    print("stores: " + ", ".join("BAR%d %d" % (b, n) for b, n in sorted(stores.items())))


if __name__ == "__main__":
    main()
