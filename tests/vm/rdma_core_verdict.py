#!/usr/bin/env python3
"""Judge a run of rdma-core's own test suite (run_tests.py -v) against the emulated device.

Usage: rdma_core_verdict.py OUTPUT EXPECT

OUTPUT is what unittest printed in verbose mode; EXPECT (rdma-core-expect.txt) says what each
outcome other than a pass is owed to:

    fail TEST-ID | WHO: WHY      a test that fails or errors for a reason outside the device
    skip REASON-PREFIX | WHO: WHY  a skip reason and who lacks the feature
    pass TEST-ID                 a test that must pass

Prints one "CHECK PASS|FAIL name detail" line per verdict (the guest lane's check format) and a
table of the outcomes by reason. Exits 0 when everything is accounted for: every FAIL or ERROR
is a listed one, every skip has a listed reason, every listed pass passed (a listed test the
suite no longer has is reported, not failed).
"""
import collections
import re
import sys

RESULT = re.compile(r"\.\.\. (ok|skipped '(.*)'|ERROR|FAIL|expected failure|unexpected success)$")
TEST = re.compile(r"^(test\S*) \((\S+)\)")


def parse(path):
    """TEST-ID -> (outcome, skip reason or None), in the order the suite ran them."""
    out, cur = {}, None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = TEST.match(line)
            if m:
                cur = m.group(2)
            r = RESULT.search(line)
            if r and cur:
                out[cur] = ("skip", r.group(2)) if r.group(2) is not None else (r.group(1), None)
                cur = None
    return out


def load_expect(path):
    fails, skips, passes = {}, [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kind, _, rest = line.partition(" ")
            key, _, why = rest.partition(" | ")
            key, why = key.strip(), why.strip()
            if kind == "fail" and why:
                fails[key] = why
            elif kind == "skip" and why:
                skips.append((key, why))
            elif kind == "pass" and not why:
                passes.append(key)
            else:
                sys.exit(f"{path}:{n}: cannot read '{line}'")
    return fails, skips, passes


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    got = parse(sys.argv[1])
    fails, skips, passes = load_expect(sys.argv[2])
    bad = 0

    def verdict(ok, name, detail=""):
        nonlocal bad
        bad += not ok
        print(f"CHECK {'PASS' if ok else 'FAIL'} {name}{' ' + detail if detail else ''}")

    counts = collections.Counter(o for o, _ in got.values())
    print(f"rdma-core suite: {len(got)} tests: " + ", ".join(f"{n} {o}" for o, n in sorted(counts.items())))
    verdict(len(got) > 0, "rdma-core-ran", f"{len(got)} tests")

    groups = collections.defaultdict(list)
    unknown_skips, device_fails = [], []
    for test, (outcome, reason) in got.items():
        if outcome in ("FAIL", "ERROR", "unexpected success"):
            if test in fails:
                groups["fail: " + fails[test]].append(test)
            else:
                device_fails.append(f"{test} {outcome}")
        elif outcome == "skip":
            who = next((w for prefix, w in skips if reason.startswith(prefix)), None)
            if who is None:
                unknown_skips.append(f"{test}: {reason}")
            else:
                groups[f"skip '{reason}': {who}"].append(test)
    for g, tests in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(tests):4d}  {g}")
    verdict(not device_fails, "rdma-core-no-unexplained-failure", "; ".join(device_fails[:10]))
    verdict(not unknown_skips, "rdma-core-no-unexplained-skip", "; ".join(unknown_skips[:10]))
    missing = [t for t in passes if t not in got]
    not_ok = [f"{t} {got[t][0]}{' ' + got[t][1] if got[t][1] else ''}" for t in passes
              if t in got and got[t][0] != "ok"]
    if missing:
        print(f"note: {len(missing)} listed tests did not run (another version of the suite, or a part of it)")
    verdict(not not_ok, "rdma-core-listed-passes",
            f"{len(passes) - len(missing) - len(not_ok)} of {len(passes) - len(missing)} passed" +
            "".join("; " + t for t in not_ok[:10]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
