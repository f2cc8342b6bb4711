"""The `inference:` section: a Triton Inference Server fleet behind an internal load balancer, autoscaled.

Used when `workload: inference`. Shape and types only; rules relating these fields to the rest of the spec live in
`inference_rules.py`, and the Triton/driver compatibility table in `triton.py`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from .strict import StrictModel

Workload = Literal["training", "inference"]
Platform = Literal["tensorrt_plan", "onnxruntime_onnx", "pytorch_libtorch", "python"]
DataType = Literal["TYPE_BOOL", "TYPE_UINT8", "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16",
                   "TYPE_FP32", "TYPE_FP64", "TYPE_BF16", "TYPE_STRING"]
TargetMetric = Literal["cpu_utilization", "gpu_utilization", "requests_per_node"]

DEFAULT_TRITON_VERSION = "25.08"
HTTP_PORT, GRPC_PORT, METRICS_PORT = 8000, 8001, 8002


class TensorSpec(StrictModel):
    """One model input, as Triton's config.pbtxt declares it (dims without the batch dimension)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:/-]+$", examples=["input"])
    data_type: DataType = Field(examples=["TYPE_FP32"])
    dims: list[int] = Field(min_length=1, examples=[[3, 224, 224]])
    """Shape without the batch dimension; -1 for a variable dimension."""


class DynamicBatching(StrictModel):
    preferred_batch_sizes: list[int] = Field(default_factory=list)
    """Batch sizes the scheduler tries to form. Default: none (largest batch up to `max_batch_size`)."""
    max_queue_delay_microseconds: int = Field(100, ge=0, le=10_000_000)
    """How long a request may wait for a batch to form. Default: 100."""


class Warmup(StrictModel):
    """Requests Triton runs against the model before it reports ready, so the first user request is not slow."""

    batch_size: int = Field(1, ge=1)
    inputs: Literal["zero", "random"] = "zero"
    count: int = Field(1, ge=1, le=1000)


class ModelSpec(StrictModel):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$", examples=["resnet50"])
    """The model's directory name in the repository."""
    platform: Platform
    max_batch_size: int = Field(8, ge=0)
    """Largest batch the model accepts; 0 for a model without a batch dimension. Default: 8."""
    dynamic_batching: DynamicBatching | None = None
    """Server-side batching. Default: off."""
    instance_count: int = Field(1, ge=1, le=64)
    """Model instances per GPU. Default: 1."""
    inputs: list[TensorSpec] = Field(default_factory=list)
    """The model's inputs; required with `warmup` (warm-up requests are built from them) and for `pytorch_libtorch`."""
    outputs: list[TensorSpec] = Field(default_factory=list)
    """The model's outputs; required for `pytorch_libtorch` (Triton cannot read them from a TorchScript file)."""
    warmup: Warmup | None = None
    """Warm-up requests before readiness. Default: none."""
    built_for_gpu: str | None = None
    """GPU model the TensorRT engine was built on (required for `tensorrt_plan`: engines do not move across GPUs)."""


class Target(StrictModel):
    metric: TargetMetric = "cpu_utilization"
    """What the autoscaler tracks. Default: "cpu_utilization" (percent), which every cloud measures without an agent.
    "gpu_utilization" (percent) and "requests_per_node" (requests/s) on AWS and GCP: the nodes publish them."""
    value: float = Field(60, gt=0)
    """Target value (percent for utilisations, requests per second for `requests_per_node`). Default: 60."""


class Autoscaling(StrictModel):
    min_nodes: int = Field(ge=0, le=4096, examples=[2])
    max_nodes: int = Field(ge=1, le=4096, examples=[8])
    target: Target = Field(default_factory=Target)


class LoadBalancer(StrictModel):
    internet_facing: bool = False
    """Explicit opt-in to a public endpoint (AWS only, with `tls_certificate_arn`). Default: internal."""
    tls_certificate_arn: str | None = Field(None, pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/.+$")
    client_cidrs: list[str] = Field(default_factory=list)
    """Who may reach ports 8000/8001 besides the cluster's own network. Default: none."""
    deregistration_delay_seconds: int = Field(120, ge=0, le=3600)
    """How long a node leaving the pool keeps serving in-flight requests. Default: 120."""


class InferenceSpec(StrictModel):
    """Triton Inference Server on every node, behind an internal load balancer."""

    model_repository: str = Field(min_length=1, examples=["s3://my-models/triton"])
    """`s3://bucket/prefix`, `gs://bucket/prefix` or `https://<account>.blob.core.windows.net/<container>/<prefix>`."""
    models: list[ModelSpec] = Field(min_length=1)
    triton_version: str = Field(DEFAULT_TRITON_VERSION, pattern=r"^\d{2}\.\d{2}$", examples=["25.08", "25.03"])
    """NGC release of `nvcr.io/nvidia/tritonserver:<version>-py3`, checked against the node's driver branch."""
    triton_image_digest: str | None = Field(None, pattern=r"^sha256:[0-9a-f]{64}$")
    """Pin the container by digest (`docker pull` prints it). Default: the digest NGC gives for the tag at `pulumi up`."""
    autoscaling: Autoscaling | None = None
    """Default: a fixed fleet of `nodes`."""
    load_balancer: LoadBalancer = Field(default_factory=LoadBalancer)
    repository_resource_group: str | None = Field(None, min_length=1, max_length=90)
    """Azure: the resource group of the repository's storage account, where the stack grants the nodes read access."""
    model_load_seconds: int = Field(600, ge=60, le=3600)
    """Time from boot to ready (install, repository sync, load, warm-up): the health grace and autoscaler delay."""
    requests_per_second_per_node: float = Field(100, gt=0)
    """Throughput assumption for the cost table's $ per million requests. Default: 100; measure with perf_analyzer."""
    protocol: Literal["http", "grpc", "both"] = "both"
    """Which Triton ports the load balancer forwards: HTTP 8000, gRPC 8001. Default: both."""

    @field_validator("triton_version", mode="before")
    @classmethod
    def _version_is_quoted(cls, value):
        if isinstance(value, (int, float)):
            raise ValueError('a quoted release like "25.08": YAML reads 25.08 as a number (and 25.10 as 25.1)')
        return value

    @model_validator(mode="after")
    def _names_unique(self) -> InferenceSpec:
        names = [m.name for m in self.models]
        if len(names) != len(set(names)):
            raise ValueError(f"model names must be unique; got {names}")
        return self


def inference_defaults(cls, raw):
    """`workload: inference` defaults to TCP and no placement group (a serving fleet spreads, it does not pack)."""
    if isinstance(raw, dict) and raw.get("workload") == "inference":
        raw = {**raw, "fabric": raw.get("fabric", "tcp"), "placement_group": raw.get("placement_group", False)}
        if raw["fabric"] == "auto":
            raw["fabric"] = "tcp"
    return raw
