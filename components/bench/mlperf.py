"""Published MLPerf results per GPU type (`data/mlperf.yaml`), turned into what `gpufleet select --objective job`
ranks by: how many GPU-hours a job takes on each GPU type, and so its time and cost on each offer.

A job is `samples` inferences of an MLPerf Inference workload at its Offline rate. A GPU type without a row for the
workload gets no job figure (never a guess from TFLOPS): its offers rank after every offer that has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from ..spec.errors import Problem, SpecError

DATA_FILE = Path(__file__).parent / "data" / "mlperf.yaml"
DEFAULT_SAMPLES = 1_000_000_000
SECONDS_PER_HOUR = 3600


@dataclass(frozen=True)
class MlperfRow:
    gpu: str
    round: str
    submitter: str
    submission: str
    accelerators: int
    result: float
    source: str

    @property
    def per_gpu(self) -> float:
        return self.result / self.accelerators


@dataclass(frozen=True)
class Workload:
    name: str
    suite: str
    scenario: str
    unit: str
    description: str
    rows: tuple[MlperfRow, ...]

    def row(self, gpu: str) -> MlperfRow | None:
        """The fastest published row of `gpu` (per GPU), or None."""
        rows = [r for r in self.rows if r.gpu == gpu]
        return max(rows, key=lambda r: r.per_gpu) if rows else None


@lru_cache(maxsize=2)
def load_workloads(path: Path = DATA_FILE) -> dict[str, Workload]:
    doc = yaml.safe_load(path.read_text())
    return {name: Workload(name=name, suite=w["suite"], scenario=w["scenario"], unit=w["unit"],
                           description=w["description"], rows=tuple(MlperfRow(**row) for row in w["rows"]))
            for name, w in doc["workloads"].items()}


def workload(name: str, field: str = "--workload") -> Workload:
    known = load_workloads()
    if name not in known:
        raise SpecError([Problem(field, name, f"expected an MLPerf workload with recorded results: "
                                 f"{', '.join(sorted(known))} (components/bench/data/mlperf.yaml)")],
                        root="gpufleet select")
    return known[name]


@dataclass(frozen=True)
class JobSize:
    """A job in the terms `Requirement` ranks by: GPU-hours on a reference GPU and each GPU's measured speed."""

    reference_gpu: str
    gpu_hours: float
    speed_factors: tuple[tuple[str, float], ...]


def job_size(work: Workload, samples: float = DEFAULT_SAMPLES) -> JobSize:
    """`samples` inferences: GPU-hours on the reference GPU (A100 when it has a row) and every row's speed."""
    gpus = sorted({r.gpu for r in work.rows})
    reference = "A100" if "A100" in gpus else gpus[0]
    ref = work.row(reference)
    assert ref is not None
    rows = {gpu: work.row(gpu) for gpu in gpus}
    factors = tuple(sorted((gpu, row.per_gpu / ref.per_gpu) for gpu, row in rows.items() if row))
    return JobSize(reference_gpu=reference, gpu_hours=samples / ref.per_gpu / SECONDS_PER_HOUR,
                   speed_factors=factors)


def job_hours(work: Workload, gpu: str, gpus: int, samples: float = DEFAULT_SAMPLES) -> float | None:
    """Wall-clock hours of the job on `gpus` GPUs of type `gpu`, or None without a row."""
    row = work.row(gpu)
    return None if row is None else samples / (row.per_gpu * gpus) / SECONDS_PER_HOUR


def job_cost_row(name: str, samples: float, gpu: str, gpus_total: int, usd_per_hour: float | None) -> dict:
    """The plan's job line: hours and USD of `samples` of workload `name` on the cluster, with the MLPerf row used
    (all None, with why, when the GPU has no published row)."""
    work = load_workloads()[name]
    row = work.row(gpu)
    hours = job_hours(work, gpu, gpus_total, samples)
    return {"workload": name, "samples": samples, "gpu": gpu, "gpus": gpus_total,
            "hours": None if hours is None else round(hours, 2),
            "usd": None if hours is None or usd_per_hour is None else round(hours * usd_per_hour, 2),
            "usd_per_hour": usd_per_hour,
            "mlperf": None if row is None else {"round": row.round, "submission": row.submission,
                                                "per_gpu": round(row.per_gpu, 2), "unit": work.unit},
            "why": "" if row is not None else f"no published MLPerf {name} row for {gpu}"}


def job_cost_lines(row: dict) -> list[str]:
    """The job line under the plan's cost table."""
    head = f"job: {row['samples']:,.0f} samples of {row['workload']} on {row['gpus']} x {row['gpu']}"
    if row["mlperf"] is None:
        return [f"{head}: not estimated ({row['why']})"]
    source = (f"MLPerf {row['mlperf']['round']} {row['mlperf']['submission']}, "
              f"{row['mlperf']['per_gpu']:,} {row['mlperf']['unit']} per GPU")
    usd = f"{row['usd']:,.2f} USD" if row["usd"] is not None else "n/a USD (no price)"
    return [f"{head}: {row['hours']:,.2f} h, {usd} at the stack's market ({source})"]
