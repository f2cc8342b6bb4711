"""MLPerf Training's score from a submission's own logs: how `data/mlperf.yaml`'s training rows were computed.

Each `result_N.txt` of a results repository (mlcommons/training_results_vX.Y, <submitter>/results/<system>/<benchmark>/)
is one run's MLLOG. MLCommons' training rules (mlcommons/training_policies, training_rules.adoc, "Each benchmark result
is computed by dropping the fastest and slowest runs, then taking the mean of the remaining times"; a single
non-converging run may be the one dropped as slowest) score a benchmark from the runs' time to train, run_stop minus
run_start. The rules' RCP normalisation (a faster-than-reference convergence scaled back) is not applied here: the
score is the raw olympic mean of the logs, said so beside every row.

Run it on a results folder to print the row's figures:
    python -m gpufleet.bench.mlperf_training .../NVIDIA/results/eos_ngc24.04_nemo/llama2_70b_lora
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

MLLOG = ":::MLLOG "
MS_PER_MINUTE = 60_000


class LogError(ValueError):
    """A run's log lacks what the score needs (run_start, run_stop)."""


@dataclass(frozen=True)
class Run:
    minutes: float
    converged: bool
    benchmark: str
    platform: str


def parse_run(text: str, name: str = "log") -> Run:
    """One run: time to train (run_stop - run_start) in minutes, and whether run_stop says status success."""
    start = stop = None
    converged, benchmark, platform = False, "", ""
    for line in text.splitlines():
        if not line.startswith(MLLOG):
            continue
        event = json.loads(line[len(MLLOG):])
        key = event.get("key")
        if key == "run_start":
            start = event["time_ms"]
        elif key == "run_stop":
            stop = event["time_ms"]
            converged = event.get("metadata", {}).get("status") == "success"
        elif key == "submission_benchmark":
            benchmark = str(event["value"])
        elif key == "submission_platform":
            platform = str(event["value"])
    if start is None or stop is None:
        raise LogError(f"{name}: no {'run_start' if start is None else 'run_stop'} event")
    return Run(minutes=(stop - start) / MS_PER_MINUTE, converged=converged, benchmark=benchmark, platform=platform)


def olympic_minutes(runs: list[Run]) -> float:
    """The rules' score: drop the fastest and the slowest run (a non-converged run counts as slowest), mean the rest.
    More than one non-converged run makes the result invalid."""
    failed = [r for r in runs if not r.converged]
    if len(failed) > 1:
        raise LogError(f"{len(failed)} runs did not converge: the result is invalid")
    if len(runs) < 3:
        raise LogError(f"{len(runs)} runs: the olympic mean needs at least 3")
    times = sorted(r.minutes if r.converged else float("inf") for r in runs)[1:-1]
    return sum(times) / len(times)


def score_folder(folder: Path) -> dict:
    runs = [parse_run(p.read_text(), p.name) for p in sorted(folder.glob("result_*.txt"))]
    if not runs:
        raise LogError(f"{folder}: no result_*.txt")
    return {"benchmark": runs[0].benchmark, "platform": runs[0].platform, "runs": len(runs),
            "minutes": round(olympic_minutes(runs), 2), "run_minutes": [round(r.minutes, 2) for r in runs]}


def main(argv: list[str]) -> int:
    try:
        for folder in argv:
            print(json.dumps({"folder": folder, **score_folder(Path(folder))}))
    except (LogError, OSError, json.JSONDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
