#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Self-test of the guest's table reader (qemu/guest/table-frames/), run on
the host by stage 0 (scripts/check-style.sh): builds it with the flags of
scripts/build-guest-tools.sh ($CC, default gcc) and runs its AMD-Vi reader on
files of ours, through TABLE_FRAMES_DEBUGFS and TABLE_FRAMES_KCORE: AMD
debugfs files (devid, devtbl) and an ELF core laid out like /proc/kcore, with
a segment without a physical address (p_paddr -1) and two RAM segments.

The good case is a 3-level AMD v1 table: a top table, two level-1 tables in
different RAM segments, three level-0 tables, leaves of every kind (4 KiB, a
large page, NextLevel 7) and an entry not present that still holds a table
address. Every table frame must be printed, once, and no leaf; the level-0
tables must not be read (one of them lies in no RAM segment). --stage-only,
passthrough, blocked and v2 DTEs give their stage alone; the reserved mode 7
is an error. Corrupt tables (a table pointing back to the top, an entry of
the wrong level, a table outside RAM) and a devtbl without the device must
end with exit status 1 and a message, within the timeout; without the AMD
directory the VT-d reader runs.
"""

import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "qemu", "guest", "table-frames")
BDF = "0000:00:04.0"
RAM = [(0x100000000, 0x10000, 0x4000), (0x200000000, 0x8000, 0x20000)]  # (paddr, size, offset)
TOP, L1A, L1B = 0x100001000, 0x100003000, 0x200002000
L0C, L0D, L0E = 0x100005000, 0x100006000, 0x300000000  # L0E: in no RAM segment
PR, IR, IW = 1, 1 << 61, 1 << 62


def table(pa, level):
    """An entry pointing to a table of level `level`, at pa."""
    return PR | level << 9 | pa | IR | IW


def leaf(pa, nl=0):
    return PR | nl << 9 | pa | IR | IW


def tables(edit=None):
    """The good 3-level tables, {pa: {index: entry}}, edited by edit(t)."""
    t = {
        TOP: {0: table(L1A, 2), 5: table(L1B, 2), 7: leaf(0x40000000, 7), 9: 2 << 9 | L0C},
        L1A: {0: table(L0C, 1), 1: table(L0D, 1), 2: leaf(0x200000), 3: leaf(0x7ff000, 7)},
        L1B: {511: table(L0E, 1)},
        # Leaves that would pass for tables if a level-0 table were read.
        L0C: {i: table(0x100008000 + i * 0x1000, 1) for i in range(4)},
        L0D: {0: leaf(0x1000)},
    }
    if edit:
        edit(t)
    return t


def kcore(path, t):
    """An ELF64 core: a PT_NOTE, a PT_LOAD without paddr, the RAM PT_LOADs."""
    phdrs = [struct.pack("<IIQQQQQQ", 4, 0, 0x1000, 0, 0, 0, 0, 4)]
    phdrs.append(struct.pack("<IIQQQQQQ", 1, 7, 0x1000, 0xffffc90000000000, 2**64 - 1, 0x8000, 0x8000, 4096))
    for paddr, size, off in RAM:
        phdrs.append(struct.pack("<IIQQQQQQ", 1, 7, off, 0xffff888000000000 + paddr, paddr, size, size, 4096))
    ehdr = (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8) +
            struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, len(phdrs), 64, 0, 0))
    image = bytearray(ehdr + b"".join(phdrs))
    image += b"\xff" * (0x28000 - len(image))  # what is no table is garbage
    for pa, entries in t.items():
        for paddr, size, off in RAM:
            if paddr <= pa < paddr + size:
                page = bytearray(4096)
                for i, e in entries.items():
                    page[i * 8:i * 8 + 8] = struct.pack("<Q", e)
                image[off + pa - paddr:off + pa - paddr + 4096] = page
    with open(path, "wb") as f:
        f.write(image)


def run(work, dte0, edit=None, args=(), line=True, kcore_ok=True):
    """table-frames over our files: (exit status, stdout, stderr, what it wrote to devid)."""
    amd = os.path.join(work, "iommu", "amd")
    os.makedirs(amd, exist_ok=True)
    open(os.path.join(amd, "devid"), "w").close()
    with open(os.path.join(amd, "devtbl"), "w") as f:
        f.write("DeviceId             QWORD[3]         QWORD[2]         QWORD[1]         QWORD[0] iommu\n")
        f.write(f"0000:00:03.0 {0:016x} {0:016x} {1:016x} {PR | 3 << 9 | 0x100000 | 3:016x} iommu0\n")
        if line:
            f.write(f"{BDF} {0:016x} {0x2000000000000013:016x} {0x5:016x} {dte0:016x} iommu0\n")
    kcore(os.path.join(work, "kcore"), tables(edit))
    env = dict(os.environ, TABLE_FRAMES_DEBUGFS=os.path.join(work, "iommu"),
               TABLE_FRAMES_KCORE=os.path.join(work, "kcore" if kcore_ok else "no-kcore"))
    p = subprocess.run([os.path.join(work, "table-frames"), *args, BDF], env=env,
                       capture_output=True, text=True, timeout=20)
    with open(os.path.join(amd, "devid")) as f:
        return p.returncode, p.stdout, p.stderr, f.read()


def main():
    v1 = PR | 2 | 3 << 9 | TOP | IR | IW
    frames = "".join(f"table 0x{pa >> 12:x}\n" for pa in (TOP, L1A, L0C, L0D, L1B, L0E))
    cases = [
        ("a 3-level table: every table frame, no leaf", (v1,),
         (0, f"stage amdv1\ntop 0x{TOP >> 12:x}\n{frames}", "")),
        ("--stage-only reads no table", (v1, None, ["--stage-only"], True, False), (0, "stage amdv1\n", "")),
        ("passthrough DTE", (PR | 2 | IR | IW,), (0, "stage passthrough\n", "")),
        ("blocked DTE", (PR,), (0, "stage none\n", "")),
        ("v2 DTE (GV)", (PR | 2 | 1 << 55 | IR | IW,), (0, "stage amdv2\n", "")),
        ("reserved mode 7", (PR | 2 | 7 << 9 | TOP,), (1, "", "reserved mode 7")),
        ("no DTE line for the device", (v1, None, (), False), (1, "", "has no entry for " + BDF)),
        ("a level-1 table pointing back to the top", (v1, lambda t: t[L1B].update({3: table(TOP, 1)})),
         (1, None, "a table reached twice")),
        ("an entry of the wrong level", (v1, lambda t: t[L1A].update({9: table(0x100007000, 2)})),
         (1, None, "next level 2")),
        ("a table in no RAM segment", (v1, lambda t: t[TOP].update({1: table(0x400000000, 2)})),
         (1, None, "no RAM segment holds the table at 0x400000000")),
    ]
    wrong = 0
    with tempfile.TemporaryDirectory() as work:
        cc = os.environ.get("CC", "gcc").split()
        srcs = sorted(os.path.join(SRC, f) for f in os.listdir(SRC) if f.endswith(".c"))
        build = subprocess.run([*cc, "-O2", "-Wall", "-Werror", "-pthread", "-o",
                                os.path.join(work, "table-frames"), *srcs], capture_output=True, text=True)
        if build.returncode:
            print(f"WRONG: table-frames does not build:\n{build.stderr}")
            return 1
        for name, args, (rc, out, err) in cases:
            try:
                got = run(work, *args)
            except subprocess.TimeoutExpired:
                got = ("timeout", "", "", "")
            good = got[0] == rc and (out is None or got[1] == out) and err in got[2] and got[3] == BDF
            print(f"{'ok' if good else 'WRONG'}: {name}" +
                  ("" if good else f": want {rc} {out!r} {err!r}, got {got!r}"))
            wrong += not good
        # Without iommu/amd the VT-d reader runs: a legacy context entry.
        os.rename(os.path.join(work, "iommu", "amd"), os.path.join(work, "iommu", "intel"))
        with open(os.path.join(work, "iommu", "intel", "dmar_translation_struct"), "w") as f:
            f.write("00:04.0\t0x0:0x1000001\t0x0:0x12345005\t-1\t0:0:0\n")
        env = dict(os.environ, TABLE_FRAMES_DEBUGFS=os.path.join(work, "iommu"))
        p = subprocess.run([os.path.join(work, "table-frames"), "--stage-only", BDF],
                           capture_output=True, text=True, timeout=20, env=env)
        good = (p.returncode, p.stdout) == (0, "stage second\n")
        print(f"{'ok' if good else 'WRONG'}: VT-d's reader without iommu/amd" + ("" if good else f": got {p!r}"))
        wrong += not good
    print(f"table-frames self-test: {len(cases) + 1 - wrong} of {len(cases) + 1} cases as expected")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
