"""Times the default test suite (`bash .ci/test`) and appends one row to benchmarks/results/suite.jsonl, so that a
commit that slows the suite shows up next to the ones before it. Goal: under 60 s wall on a 2-core machine.

    .venv/bin/python benchmarks/suite_time.py [pytest args]     # e.g. -q; the row records them

A row: the date, the commit (and whether the tree had uncommitted changes), the machine's core count and its load
average before the run, wall seconds, CPU seconds (user + system of every process the run started, which waiting
for a shared core does not inflate) and pytest's summary line. On a machine shared with other jobs the wall time
also counts the waits; compare CPU seconds between rows from different machines or loads. CPU seconds still grow on
a slower host (a shared virtual machine's speed drifts: this calibration has read 0.275 s before a run and 0.212 s
after it), so a row also holds `calibration_s`, the time of one fixed pure-Python loop (fastest of three) just before
and just after the run: a row whose CPU seconds grew with its calibration is a slower host, not a slower suite.
`content_cache_entries_before` counts the tests' content cache (kept between runs): 0 is a cold run, as on CI. Exits
with the suite's exit code; the row is written either way.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "suite.jsonl"
TEST_CONTENT_CACHE = ROOT / ".venv" / "test-content-cache"
SUMMARY = re.compile(r"\d+ (passed|failed|error).* in [\d.]+s")  # pytest's last line: "1513 passed, 8 skipped in 59.1s"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def calibration_seconds() -> float:
    """CPU seconds of one fixed loop, the fastest of three: the host's speed at this moment."""
    times = []
    for _ in range(3):
        start = time.process_time()
        sum(i * i for i in range(3_000_000))
        times.append(time.process_time() - start)
    return round(min(times), 3)


def content_cache_entries() -> int:
    """Entries in the tests' content cache before the run (tests/conftest.py keeps it between runs): 0 is a cold
    run, as on CI's clean clone, which redoes every zopfli and YAML transform (about 15 s of CPU more)."""
    return sum(1 for entry in TEST_CONTENT_CACHE.rglob("*") if entry.is_file()) if TEST_CONTENT_CACHE.is_dir() else 0


def main() -> int:
    args = sys.argv[1:]
    subprocess.run(["bash", ".ci/setup"], cwd=ROOT, check=True)  # a venv rebuild is not the suite's time
    load = os.getloadavg()[0]
    cached = content_cache_entries()
    calibration_before = calibration_seconds()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(["bash", ".ci/test", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    calibration_after = calibration_seconds()
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    summary = next((line.strip("= ") for line in reversed(lines) if SUMMARY.search(line)),
                   lines[-1] if lines else "(no output)")
    row = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git("rev-parse", "--short", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "cores": os.cpu_count(),
        "load_before": round(load, 2),
        "wall_s": round(wall, 1),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
        "calibration_s": [calibration_before, calibration_after],
        "content_cache_entries_before": cached,
        "summary": summary,
        "args": args,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as out:
        out.write(json.dumps(row) + "\n")
    print(done.stdout[-3000:], end="")
    print(done.stderr[-2000:], end="", file=sys.stderr)
    print(f"suite: {row['wall_s']} s wall, {row['cpu_s']} s CPU on {row['cores']} cores (load before "
          f"{row['load_before']}, calibration {calibration_before}/{calibration_after} s, {cached} cached entries before), "
          f"{summary}; "
          f"recorded in {RESULTS.relative_to(ROOT)}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
