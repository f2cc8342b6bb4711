"""Plan time and resource count at 8 and at 1,024 nodes, and their ratio (goal: ~1 s, ratio ~1).

    .venv/bin/python benchmarks/plan_scale.py [stack]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpufleet.plan.runner import run_program  # noqa: E402
from gpufleet.plan.stackfile import apply_overrides, read_stack_config  # noqa: E402

REPEATS = 3


def measure(stack: str, nodes: int) -> tuple[float, int]:
    config = apply_overrides(read_stack_config(stack), [f"nodes={nodes}"])
    best, count = float("inf"), 0
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = run_program(stack, config)
        best = min(best, time.perf_counter() - start)
        count = len(result.resources)
    return best, count


def main() -> None:
    stack = sys.argv[1] if len(sys.argv) > 1 else "aws-train"
    start = time.perf_counter()
    run_program(stack, read_stack_config(stack))
    print(f"{stack}: first plan (imports included) {time.perf_counter() - start:.2f} s")
    small_time, small_count = measure(stack, 8)
    large_time, large_count = measure(stack, 1024)
    print(f"{stack}:    8 nodes: {small_time:.3f} s, {small_count} resources")
    print(f"{stack}: 1024 nodes: {large_time:.3f} s, {large_count} resources")
    print(f"{stack}: time ratio {large_time / small_time:.2f}, resource ratio {large_count / small_count:.2f}")


if __name__ == "__main__":
    main()
