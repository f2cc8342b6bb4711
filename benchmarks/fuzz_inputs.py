"""The long fuzz run: the same properties as tests/fuzz (issue 10), with many more examples and a fresh seed.

    .venv/bin/python benchmarks/fuzz_inputs.py [scale]     # default scale 20: about 20x the CI run's examples

CI runs the properties deterministically (`-m fuzz`, ~10 s); this run draws new inputs each time (no derandomize),
so run it after changing the spec, the rules or the CLI, and turn any failure into a case in
tests/plan/test_bad_input.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(scale: str = "20") -> int:
    env = dict(os.environ, GPUFLEET_FUZZ_SCALE=scale, GPUFLEET_FUZZ_RANDOM="1")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "tests/fuzz", "-m", "fuzz", "-q", "-n", "auto",
                           "-p", "no:randomly"], cwd=ROOT, env=env)
    print(f"fuzz run at scale {scale}: {time.perf_counter() - start:.1f} s, exit {done.returncode}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
