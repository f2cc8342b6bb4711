"""`gpufleet diff` against one `gpufleet plan`, end to end as a user runs them (goal: under 1.5x).

For each of two stacks: the time of `gpufleet plan STACK --json`, of `gpufleet diff BASE.json HEAD.json` (two plan
files), and of `gpufleet diff git:HEAD:STACK git:HEAD:STACK` (both sides planned in one warm process because the
ref's code is this checkout's), and of a diff whose base ref has other code (a child interpreter plans it beside
this process). Best of 3.

    .venv/bin/python benchmarks/diff_speed.py [STACK STACK]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GPUFLEET = str(Path(sys.executable).parent / "gpufleet")
REPEATS = 3
GOAL = 1.5
OTHER_CODE_REF = "087272c"  # the package-dir commit: its components/ differ from any later checkout's


def best_of(command: list[str], ok: tuple[int, ...] = (0, 1)) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        best = min(best, time.perf_counter() - start)
        if done.returncode not in ok:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return best


def main() -> None:
    stacks = sys.argv[1:3] or ["aws-train", "gcp-train"]
    with tempfile.TemporaryDirectory() as folder:
        for stack in stacks:
            base, head = Path(folder) / f"{stack}-base.json", Path(folder) / f"{stack}-head.json"
            base.write_text(subprocess.run([GPUFLEET, "plan", stack, "--json"], cwd=ROOT, capture_output=True,
                                           text=True, check=True).stdout)
            head.write_text(subprocess.run([GPUFLEET, "plan", stack, "--set", "nodes=4", "--json"], cwd=ROOT,
                                           capture_output=True, text=True, check=True).stdout)
            plan = best_of([GPUFLEET, "plan", stack, "--json"], ok=(0,))
            files = best_of([GPUFLEET, "diff", str(base), str(head), "--markdown"])
            refs = best_of([GPUFLEET, "diff", f"git:HEAD:{stack}", f"git:HEAD:{stack}", "--markdown"])
            other = best_of([GPUFLEET, "diff", f"git:{OTHER_CODE_REF}:{stack}", f"git:HEAD:{stack}", "--markdown"])
            for label, seconds in (("diff of two plan files", files), ("diff git:HEAD vs git:HEAD", refs),
                                   (f"diff git:{OTHER_CODE_REF} (a child interpreter) vs git:HEAD", other)):
                ratio = seconds / plan
                verdict = "ok" if ratio < GOAL else f"OVER the {GOAL}x goal"
                print(f"{stack}: plan {plan:.2f} s; {label} {seconds:.2f} s = {ratio:.2f}x ({verdict})")


if __name__ == "__main__":
    main()
