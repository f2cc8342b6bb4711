"""Fuzz tests run only when asked (`-m fuzz`, as `.ci/run` does): a deterministic, ~10 s run. The longer run is
benchmarks/fuzz_inputs.py."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

# Examples per property; benchmarks/fuzz_inputs.py raises it. The default keeps `-m fuzz` near 10 s on 2 cores.
SCALE = float(os.environ.get("GPUFLEET_FUZZ_SCALE", "1"))


def examples(count: int) -> int:
    return max(1, int(count * SCALE))


class CaseTimeout(BaseException):
    """One fuzz case ran past its time bound: a hang, which is a failure (a BaseException, so the CLI's handler for
    internal errors does not turn it into an exit code)."""


@contextmanager
def time_bound(seconds: int) -> Iterator[None]:
    """Fails the case if it runs past `seconds` (SIGALRM: pytest runs tests in the main thread)."""
    def expire(signum, frame):
        raise CaseTimeout(f"ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
