#!/usr/bin/env python3
# analyze.py TRACE USED_IOVA... : for each used ring IOVA (in order of the port's DRIVER_OK
# events), print the GPA the vtd IOTLB first gave each used-ring IOVA page after that
# DRIVER_OK (vtd_iotlb_page_update, sid 0x68 = 00:0d.0), and whether they are contiguous.
import sys, re
tr = sys.argv[1]; useds = [int(x, 16) for x in sys.argv[2:]]
lines = open(tr, errors="replace").read().splitlines()
# port vdev: the one whose status goes to 0 after boot (the rebind); find DRIVER_OK (15) events
st = [(i, l) for i, l in enumerate(lines) if "virtio_set_status" in l]
vdevs = {}
for i, l in st:
    m = re.search(r"vdev (0x[0-9a-f]+) val (\d+)", l); vdevs.setdefault(m.group(1), []).append((i, int(m.group(2))))
port = max(vdevs, key=lambda v: sum(1 for _, s in vdevs[v] if s == 0))
oks = [i for i, s in vdevs[port] if s == 15]
print(f"port vdev {port}: DRIVER_OK at trace lines {oks}")
upd = re.compile(r"vtd_iotlb_page_update IOTLB page update sid 0x68 iova (0x[0-9a-f]+) slpte (0x[0-9a-f]+)")
for k, (ok, used) in enumerate(zip(oks, useds)):
    end = oks[k + 1] if k + 1 < len(oks) else len(lines)
    u0 = used & ~0xfff
    first = {}
    for i in range(ok, end):
        m = upd.search(lines[i])
        if not m: continue
        p = int(m.group(1), 16) & ~0xfff
        if p in (u0, u0 + 0x1000, u0 + 0x2000) and p not in first:
            first[p] = (i, int(m.group(2), 16) & 0xffffffffff000)
    print(f"ring {k}: used ring at IOVA {used:#x} (elements straddle at IOVA {u0+0xffc:#x} and {u0+0x1ffc:#x})")
    for p in (u0, u0 + 0x1000, u0 + 0x2000):
        if p in first:
            print(f"   IOVA {p:#x} -> GPA {first[p][1]:#x}   (trace line {first[p][0]}: {lines[first[p][0]].strip()[:110]})")
    for a, b in ((u0, u0 + 0x1000), (u0 + 0x1000, u0 + 0x2000)):
        if a in first and b in first:
            ga, gb = first[a][1], first[b][1]
            print(f"   {'contiguous' if gb == ga + 0x1000 else 'NOT contiguous'}: element straddling IOVA {a+0xffc:#x}: id -> GPA {ga+0xffc:#x}, "
                  f"len written by QEMU to GPA {ga+0x1000:#x} instead of {gb:#x}")
