"""Published MLPerf results per GPU type (`data/mlperf.yaml`), turned into what `gpufleet select --objective job`
ranks by: how many GPU-hours a job takes on each GPU type, and so its time and cost on each offer.

A job of an MLPerf Inference workload is `samples` inferences at its Offline rate. A job of an MLPerf Training workload
is one training run to the target quality, taking the row's time to train on exactly the row's number of GPUs (no
scaling to other sizes is assumed). A GPU type (or GPU count) without a row for the workload gets no job figure (never
a guess from TFLOPS): its offers rank after every offer that has one.
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
    result: float  # inference: samples/s of the system; training: time to train in minutes
    source: str
    submission_id: str | None = None  # MLCommons' "<round>-<nnnn>" id where a public source gives it
    system: str = ""
    nodes: int = 1
    runs: int | None = None  # training: result_N.txt files the olympic mean was taken over

    @property
    def per_gpu(self) -> float:
        """Inference: samples/s per GPU. Training: trainings per GPU-hour (higher is faster), for speed ratios."""
        if self.round.startswith("training"):
            return 60 / (self.result * self.accelerators)
        return self.result / self.accelerators

    @property
    def hours(self) -> float:
        """Training: the time to train in hours."""
        return self.result / 60


@dataclass(frozen=True)
class Workload:
    name: str
    suite: str
    scenario: str
    unit: str
    description: str
    rows: tuple[MlperfRow, ...]

    @property
    def training(self) -> bool:
        return self.suite == "training"

    def row(self, gpu: str) -> MlperfRow | None:
        """The fastest published row of `gpu` (per GPU), or None."""
        rows = [r for r in self.rows if r.gpu == gpu]
        return max(rows, key=lambda r: r.per_gpu) if rows else None

    def row_for(self, gpu: str, gpus: float) -> MlperfRow | None:
        """The row a job on `gpus` GPUs of type `gpu` is priced from: training needs a row measured on exactly that
        many GPUs; inference scales the best per-GPU rate."""
        if not self.training:
            return self.row(gpu)
        return next((r for r in self.rows if r.gpu == gpu and r.accelerators == gpus), None)

    def training_runs(self) -> tuple[tuple[str, int, float], ...]:
        """Training: (GPU, GPUs, hours to train) of every row, the only sizes a training job is priced at."""
        return tuple(sorted((r.gpu, r.accelerators, r.hours) for r in self.rows)) if self.training else ()


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
    """`samples` inferences (training: one run): GPU-hours on the reference GPU (A100, else H100, when it has a row)
    and every row's speed."""
    gpus = sorted({r.gpu for r in work.rows})
    reference = next((g for g in ("A100", "H100") if g in gpus), gpus[0])
    ref = work.row(reference)
    assert ref is not None
    rows = {gpu: work.row(gpu) for gpu in gpus}
    factors = tuple(sorted((gpu, row.per_gpu / ref.per_gpu) for gpu, row in rows.items() if row))
    gpu_hours = ref.hours * ref.accelerators if work.training else samples / ref.per_gpu / SECONDS_PER_HOUR
    return JobSize(reference_gpu=reference, gpu_hours=gpu_hours,
                   speed_factors=factors)


def job_hours(work: Workload, gpu: str, gpus: int, samples: float = DEFAULT_SAMPLES) -> float | None:
    """Wall-clock hours of the job on `gpus` GPUs of type `gpu`, or None without a row (training: for that count)."""
    row = work.row_for(gpu, gpus)
    if row is None:
        return None
    return row.hours if work.training else samples / (row.per_gpu * gpus) / SECONDS_PER_HOUR


def job_cost_row(name: str, samples: float, gpu: str, gpus_total: int, usd_per_hour: float | None) -> dict:
    """The plan's job line: hours and USD of `samples` of workload `name` on the cluster, with the MLPerf row used
    (all None, with why, when the GPU has no published row)."""
    work = load_workloads()[name]
    row = work.row_for(gpu, gpus_total)
    hours = job_hours(work, gpu, gpus_total, samples)
    why = f"no published MLPerf {name} row for {gpu}"
    if work.training and work.row(gpu) is not None:
        sizes = sorted(r.accelerators for r in work.rows if r.gpu == gpu)
        why = f"MLPerf {name} rows for {gpu} are on {', '.join(map(str, sizes))} GPUs, not {gpus_total}"
    return {"workload": name, "suite": work.suite, "samples": None if work.training else samples, "gpu": gpu,
            "gpus": gpus_total,
            "hours": None if hours is None else round(hours, 2),
            "usd": None if hours is None or usd_per_hour is None else round(hours * usd_per_hour, 2),
            "usd_per_hour": usd_per_hour,
            "mlperf": None if row is None else {"round": row.round, "submission": row.submission,
                                                "submission_id": row.submission_id, "result": row.result,
                                                "per_gpu": round(row.per_gpu, 2), "unit": work.unit},
            "why": "" if row is not None else why}


def job_cost_lines(row: dict) -> list[str]:
    """The job line under the plan's cost table."""
    training = row.get("suite") == "training"
    size = "one training run" if training else f"{row['samples']:,.0f} samples"
    head = f"job: {size} of {row['workload']} on {row['gpus']} x {row['gpu']}"
    if row["mlperf"] is None:
        return [f"{head}: not estimated ({row['why']})"]
    figure = (f"{row['mlperf']['result']:,} minutes to train" if training
              else f"{row['mlperf']['per_gpu']:,} {row['mlperf']['unit']} per GPU")
    source = f"MLPerf {row['mlperf']['round']} {row['mlperf']['submission']}, {figure}"
    usd = f"{row['usd']:,.2f} USD" if row["usd"] is not None else "n/a USD (no price)"
    return [f"{head}: {row['hours']:,.2f} h, {usd} at the stack's market ({source})"]
