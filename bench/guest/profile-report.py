#!/usr/bin/env python3
"""bench/guest.sh --profile: per-I/O figures from the guest's profile.csv.

    profile-report.py RAW.csv OUT.csv HOST_CLK_TCK

RAW rows are device,key,difference over one fio run; OUT rows device,key,per_io. Prints a table.
"""
import csv, sys
raw, out, host_hz = sys.argv[1], sys.argv[2], float(sys.argv[3])
v = {}
for r in csv.DictReader(open(raw)):
    v.setdefault(r["device"], {})[r["key"]] = float(r["value"])
rows = []
for dev, k in v.items():
    ios, ghz = k.pop("ios"), k.pop("guest_clk_tck")
    for key, val in sorted(k.items()):
        if key in ("user", "system", "irq", "idle"):
            rows.append((dev, "guest_" + key + "_us", val / ghz * 1e6 / ios))
        elif key == "server_cpu_ticks":
            rows.append((dev, "server_cpu_us", val / host_hz * 1e6 / ios))
        else:
            rows.append((dev, key, val / ios))
    rows.append((dev, "ios", ios))
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["device", "key", "per_io"])
    for r in rows:
        w.writerow([r[0], r[1], f"{r[2]:.4g}"])
print(f"{'per I/O':28} {'ionic-nvmeof':>14} {'virtio-blk':>14}")
keys = sorted({r[1] for r in rows})
tab = {(r[0], r[1]): r[2] for r in rows}
for key in keys:
    a, b = tab.get(("ionic-nvmeof", key)), tab.get(("virtio-blk", key))
    fmt = lambda x: "" if x is None else f"{x:.4g}"
    print(f"{key:28} {fmt(a):>14} {fmt(b):>14}")
