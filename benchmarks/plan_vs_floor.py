"""`gpufleet plan aws-train` against the floor program (benchmarks/plan_floor.py), as a ratio measured in one run, at
2 and at 1,024 nodes. Goal: plan / floor <= 1.3 at both sizes.

    .venv/bin/python benchmarks/plan_vs_floor.py [--repeats 5] [--stack aws-train]

Each round runs the floor (as is, and with the `gpufleet` command's process settings) and the plan, at both sizes, as whole processes one after another, so a busy shared
machine slows both sides alike; the ratio is of the medians over the rounds. It is computed on CPU time (user +
system of the child process), which waiting for a shared core does not inflate; wall times are printed beside it.
Before the rounds, one plan runs with an empty content cache (`GPUFLEET_CACHE_DIR`, see
gpufleet.cloud_init.content_cache) to show what a first plan costs; the rounds then use that same cache, as every
later plan of a user does. Both sides have their bytecode compiled first (as an installed package has).

Each run appends one row to benchmarks/results/plan_vs_floor.jsonl: the date, the commit (and whether the tree had
uncommitted changes), cores, load average before and after, the host's speed before and after (`calibration_s`, the
fixed loop of benchmarks/suite_time.py: a shared virtual machine's speed drifts, and the ratio has read 1.21 to 1.36
on hosts of the same kind), rounds, and per size the median CPU and wall seconds of the plan, the floor and the floor
with the CLI's settings, and the ratio; `--commit` names the tree where it is not a git checkout (an exported older
commit, run for a before/after comparison).

The last line repeats the default suite's most recent time from benchmarks/results/suite.jsonl (written by
benchmarks/suite_time.py), so one command shows both numbers the README quotes. Exits 1 when a ratio is over 1.3.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from suite_time import calibration_seconds  # this folder is the script's sys.path[0]

ROOT = Path(__file__).resolve().parents[1]
FLOOR = ROOT / "benchmarks" / "plan_floor.py"
SUITE_RESULTS = ROOT / "benchmarks" / "results" / "suite.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "plan_vs_floor.jsonl"
SIZES = (2, 1024)
GOAL = 1.3


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one process, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def plan_command(stack: str, nodes: int) -> list[str]:
    return [sys.executable, "-m", "gpufleet.plan.entry", "plan", stack, "--set", f"nodes={nodes}"]


def floor_command(nodes: int, *flags: str) -> list[str]:
    return [sys.executable, str(FLOOR), str(nodes), *flags]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--stack", default="aws-train")
    parser.add_argument("--commit", help="what the row records as the commit (default: this checkout's HEAD)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    calibration_before = calibration_seconds()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-cache-") as cache:
        env["GPUFLEET_CACHE_DIR"] = cache
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "components"), str(ROOT / "cloud_init"),
                        str(FLOOR)], check=True, stdout=subprocess.DEVNULL)
        timed(floor_command(2), env)  # the provider SDK's own bytecode, in case nothing compiled it yet
        cold_cpu, cold_wall = timed(plan_command(args.stack, 2), env)
        runs: dict[tuple[str, int], list[tuple[float, float]]] = {}
        for _ in range(args.repeats):
            for nodes in SIZES:
                runs.setdefault(("floor", nodes), []).append(timed(floor_command(nodes), env))
                runs.setdefault(("floor-like-cli", nodes), []).append(timed(floor_command(nodes, "--like-cli"), env))
                runs.setdefault(("plan", nodes), []).append(timed(plan_command(args.stack, nodes), env))
    cores = os.cpu_count()
    load = os.getloadavg()[0]
    calibration_after = calibration_seconds()
    print(f"{args.stack} vs floor, {args.repeats} rounds, {cores} cores, load average {load:.1f}, calibration "
          f"{calibration_before}/{calibration_after} s; medians, CPU (user+sys) and wall")
    print(f"first plan, empty content cache: {cold_cpu:.2f} s CPU, {cold_wall:.2f} s wall")
    worst = 0.0
    sizes = {}
    for nodes in SIZES:
        floor_cpu, floor_wall = medians(runs[("floor", nodes)])
        plan_cpu, plan_wall = medians(runs[("plan", nodes)])
        ratio = plan_cpu / floor_cpu
        worst = max(worst, ratio)
        same_gc_cpu = statistics.median(cpu for cpu, _ in runs[("floor-like-cli", nodes)])
        print(f"{nodes:>5} nodes: plan {plan_cpu:.2f} s CPU ({plan_wall:.2f} s wall), floor {floor_cpu:.2f} s CPU "
              f"({floor_wall:.2f} s wall): plan/floor {ratio:.2f} (wall {plan_wall / floor_wall:.2f}); goal <= {GOAL}")
        print(f"{'':>5}        floor with the CLI's process settings (gpufleet.plan.entry) {same_gc_cpu:.2f} s CPU: "
              f"plan/floor {plan_cpu / same_gc_cpu:.2f}")
        sizes[str(nodes)] = {"plan_cpu_s": round(plan_cpu, 3), "plan_wall_s": round(plan_wall, 3),
                             "floor_cpu_s": round(floor_cpu, 3), "floor_wall_s": round(floor_wall, 3),
                             "floor_like_cli_cpu_s": round(same_gc_cpu, 3), "ratio": round(ratio, 3)}
    record({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "commit": args.commit or git("rev-parse", "--short", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no")) if not args.commit else None,
            "cores": cores, "load_before": round(load_before, 2), "load_after": round(load, 2),
            "calibration_s": [calibration_before, calibration_after], "rounds": args.repeats, "stack": args.stack,
            "first_plan_cpu_s": round(cold_cpu, 3), "sizes": sizes})
    print(suite_line())
    return 0 if worst <= GOAL else 1


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def record(row: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as out:
        out.write(json.dumps(row) + "\n")


def medians(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """(median CPU, median wall)."""
    return statistics.median(cpu for cpu, _ in samples), statistics.median(wall for _, wall in samples)


def suite_line() -> str:
    """The newest row benchmarks/suite_time.py recorded."""
    if not SUITE_RESULTS.exists():
        return "suite: no time recorded yet; run benchmarks/suite_time.py"
    row = json.loads(SUITE_RESULTS.read_text().splitlines()[-1])
    return (f"suite (benchmarks/results/suite.jsonl, commit {row['commit']}, {row['cores']} cores, load "
            f"{row['load_before']:.1f}): {row['wall_s']:.1f} s wall, {row['cpu_s']:.1f} s CPU, {row['summary']}")


if __name__ == "__main__":
    sys.exit(main())
