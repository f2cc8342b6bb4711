"""`job`: the MLPerf workload whose cost and time the plan shows beside the hourly price (issue 31)."""

from __future__ import annotations

from pydantic import Field, field_validator

from .strict import StrictModel


class JobEstimate(StrictModel):
    """Price one job instead of one hour: `samples` inferences of a published MLPerf Inference workload, at the
    per-GPU rate MLCommons published for the cluster's GPU, or one run of an MLPerf Training workload, at the time to
    train published for the cluster's GPU type and GPU count (components/bench/data/mlperf.yaml)."""

    mlperf: str = Field(min_length=1, examples=["bert-99", "resnet50", "llama2_70b_lora"])
    """The MLPerf workload name (as `gpufleet select --workload` takes it)."""
    samples: float = Field(1_000_000_000, gt=0)
    """The job's size in samples (inference workloads; a training job is one run). Default: 1e9."""

    @field_validator("mlperf")
    @classmethod
    def _recorded(cls, name: str) -> str:
        from ..bench.mlperf import load_workloads
        known = load_workloads()
        if name not in known:
            raise ValueError(f"expected an MLPerf workload with recorded results: {', '.join(sorted(known))}")
        return name
