"""nccl-tests output: the bus bandwidth of one message size. The node's perf-check reads the same format with its own
copy of this parser (cloud_init never imports components); tests/bench/test_bench.py keeps the two in step."""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = re.compile(r"^(\[[^\]]*\]<\w+>:|\d+:)\s*")  # srun's "0:" or Open MPI's "[1,0]<stdout>:"


@dataclass(frozen=True)
class BusBandwidth:
    """One result row: the larger of the out-of-place and in-place bus bandwidth (GB/s) and the wrong results
    counted (None when the run did not check)."""

    size: int
    busbw: float
    wrong: int | None


def busbw_at(output: str, size: int) -> BusBandwidth | None:
    """The row of `size` bytes, or None when the output has none."""
    for line in output.splitlines():
        fields = PREFIX.sub("", line.strip()).split()
        if len(fields) < 12 or not fields[0].isdigit() or int(fields[0]) != size:
            continue
        try:
            busbw = max(float(fields[-6]), float(fields[-2]))
        except ValueError:
            return None
        wrong = [f for f in (fields[-5], fields[-1]) if f.isdigit()]
        return BusBandwidth(size, busbw, sum(int(f) for f in wrong) if wrong else None)
    return None
