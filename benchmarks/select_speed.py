"""Prints how long `gpufleet select` takes: catalog load (with every sanity check) and ranking.

    .venv/bin/python benchmarks/select_speed.py [--requirements 200]

Ranks seeded random requirements over the shipped catalog and prints load time, ranking time per
requirement (mean and max) and how many candidates (instance type x location) each ranking weighs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpufleet.catalog.loader import read_catalog  # noqa: E402
from gpufleet.catalog.offers import MARKETS, Requirement, candidates, rank  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requirements", type=int, default=200)
    args = parser.parse_args()
    start = time.perf_counter()
    catalog = read_catalog()
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    count = len(candidates(catalog))
    indexed = time.perf_counter() - start
    rng = random.Random(7)
    gpus = sorted({i.gpu for i in catalog.instances.values()})
    timings, feasible = [], 0
    for _ in range(args.requirements):
        req = Requirement(gpus=tuple(rng.sample(gpus, rng.choice([0, 1, 2]))), nodes=rng.choice([1, 2, 8]),
                          gpus_per_node=rng.choice([None, 1, 8]), market=rng.choice(MARKETS),
                          fabric=rng.choice(["auto", "rdma"]), job_gpu_hours=rng.choice([None, 1000.0]))
        start = time.perf_counter()
        feasible += bool(rank(req, catalog).offers)
        timings.append(time.perf_counter() - start)
    print(f"catalog load + sanity checks: {loaded * 1000:.0f} ms ({len(catalog.instances)} types, "
          f"{len(catalog.raw_prices)} price rows, {len(catalog.flags)} flags)")
    print(f"candidate index: {indexed * 1000:.0f} ms ({count} type x location candidates)")
    print(f"rank: mean {statistics.mean(timings) * 1000:.1f} ms, max {max(timings) * 1000:.1f} ms over "
          f"{len(timings)} requirements ({feasible} feasible)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
