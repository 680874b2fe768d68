#!/usr/bin/env python3
"""Counts test results across meson test logs.

Each doctest executable reports how many test cases passed and failed, and
each pytest run prints a summary ("85 passed, 2 failed, 1 skipped in 3.2s");
those counts are used. Any other test (scripts, the conformance runner)
counts as one. A test that crashed or timed out before its summary counts as
one failure, as does a failed run whose summary shows no failure. Prints the
last lines each failed test printed (a sanitizer's report at exit, say, which
the full log shows far above), the per-build table and, last, one line
"N passed, N failed". Exits non-zero when anything failed.
"""
import json
import re
import sys

DOCTEST = re.compile(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed")
# pytest's last line, with or without its "=====" frame.
PYTEST = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s(?: \([\d:]+\))?\s*=*\s*$",
                    re.MULTILINE)
PYTEST_PASSED = ("passed", "xfailed")         # an expected failure is a pass
PYTEST_FAILED = ("failed", "error", "errors")
# How much of a failed test's output the summary repeats.
TAIL_LINES = 25
TAILS_SHOWN = 8


def pytest_counts(stdout):
    """(passed, failed) from pytest's summary line, or None if there is none."""
    matches = PYTEST.findall(stdout)
    if not matches:
        return None
    counts = {}
    for part in matches[-1].split(", "):
        number, word = part.split(" ", 1)
        counts[word] = counts.get(word, 0) + int(number)
    passed = sum(counts.get(w, 0) for w in PYTEST_PASSED + ("xpassed",))
    failed = sum(counts.get(w, 0) for w in PYTEST_FAILED)
    return passed, failed


def count(path):
    """(passed, failed, [(name, last lines of its output)] of the failures)."""
    passed = failed = 0
    failures = []
    with open(path) as f:
        for line in f:
            entry = json.loads(line)
            ok = entry["result"] in ("OK", "EXPECTEDFAIL", "SKIP")
            stdout = entry.get("stdout", "") or ""
            # The last summary is the test process's own: a child it forks
            # that dies in doctest's crash handler prints one of its own first.
            matches = list(DOCTEST.finditer(stdout))
            match = matches[-1] if matches else None
            from_pytest = pytest_counts(stdout) if not match else None
            if match and entry["result"] in ("OK", "FAIL"):
                p, fl = int(match.group(2)), int(match.group(3))
                if not ok and fl == 0:
                    fl = 1  # failed outside any test case (e.g. a sanitizer report)
            elif from_pytest and entry["result"] in ("OK", "FAIL"):
                p, fl = from_pytest
                if not ok and fl == 0:
                    fl = 1  # failed outside any test (e.g. a crash at exit)
            else:
                p, fl = (1, 0) if ok else (0, 1)
            passed += p
            failed += fl
            if fl:
                tail = stdout.rstrip("\n").split("\n")[-TAIL_LINES:]
                failures.append((entry["name"], tail))
    return passed, failed, failures


def main(paths):
    total_passed = total_failed = 0
    rows = []
    tails = []
    for path in paths:
        try:
            p, f, failures = count(path)
        except FileNotFoundError:
            rows.append(f"{path}: missing (build failed?)")
            total_failed += 1
            continue
        names = [name for name, _ in failures]
        rows.append(f"{path}: {p} passed, {f} failed" + (f"  ({', '.join(names)})" if names else ""))
        tails += [(path, name, tail) for name, tail in failures]
        total_passed += p
        total_failed += f
    for path, name, tail in tails[:TAILS_SHOWN]:
        print(f"== failed: {name} ({path}), its last {len(tail)} lines")
        print("\n".join(tail))
    print("\n".join(rows))
    print(f"{total_passed} passed, {total_failed} failed")
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
