"""The inference node's parts: Triton's config.pbtxt per model, its parameters file, the repository sync script and
the Triton systemd unit.

The static files live under `inference/` (same layout as `files/`: "inference/etc/x" lands at "/etc/x"), so the
training node's tree under `files/` is unchanged. `config.pbtxt` text is written here in protobuf text format;
the tests parse every one with the `model_config.proto` that tritonclient ships, so a field Triton would reject
fails there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .env_file import render_env_file
from .shipped import Part, shipped

INFERENCE_DIR = Path(__file__).parent / "inference"
TRITON_ENV_PATH = "/etc/gpufleet/triton.env"
CONFIG_DIR = "/etc/gpufleet/triton/config"
UNIT = "gpufleet-triton.service"
METRICS_UNIT = "gpufleet-triton-metrics.service"
STATIC = (
    "etc/systemd/system/" + UNIT,
    "usr/local/lib/gpufleet/triton-sync",
    "usr/local/lib/gpufleet/triton-server",
)
# Written only where the autoscaler tracks a metric the node publishes (`scale_metric`), with the cloud's part.
PUBLISHER = ("etc/systemd/system/" + METRICS_UNIT, "usr/local/lib/gpufleet/triton-metrics")
PUBLISHER_CLOUD_PART = "usr/local/lib/gpufleet/triton-metrics-{cloud}"
# Where the node publishes each autoscaling metric, and where the cloud's autoscaler reads it. AWS: one CloudWatch
# namespace (the node role may put metrics there only) with the dimension Cluster=<cluster name>; GCP: a custom
# Cloud Monitoring metric per gce_instance.
AWS_METRIC_NAMESPACE = "gpufleet/Inference"
AWS_METRIC_NAMES = {"gpu_utilization": "GPUUtilization", "requests_per_node": "RequestsPerSecond"}
GCP_METRIC_TYPES = {"gpu_utilization": "custom.googleapis.com/gpufleet/triton/gpu_utilization",
                    "requests_per_node": "custom.googleapis.com/gpufleet/triton/requests_per_second"}
PUBLISH_SECONDS = 60
# Containers that copy the model repository with the node's own identity. UNVERIFIED: the AWS and Azure tags were
# not pulled here (no access to those registries); bump them deliberately, like every pinned node download. GCP
# deletes google-cloud-cli version tags after 365 days (GoogleCloudPlatform/cloud-sdk-docker README, "Package
# retention policy"), so a version pin would stop pulling within a year: the GCP sync uses the `stable` tag.
SYNC_IMAGES = {
    "aws": "public.ecr.aws/aws-cli/aws-cli:2.27.50",
    "gcp": "gcr.io/google.com/cloudsdktool/google-cloud-cli:stable",
    "azure": "mcr.microsoft.com/azure-cli:2.75.0",
}
BACKEND_PLATFORMS = {"python": "python"}  # platforms Triton names as a backend, not a platform


@dataclass(frozen=True)
class TensorConfig:
    name: str
    data_type: str
    dims: tuple[int, ...]


@dataclass(frozen=True)
class WarmupConfig:
    batch_size: int
    random: bool
    count: int


@dataclass(frozen=True)
class TritonModel:
    name: str
    platform: str
    max_batch_size: int
    instance_count: int
    preferred_batch_sizes: tuple[int, ...] | None = None
    """None: no dynamic batching; () turns it on with Triton's own preferred sizes."""
    max_queue_delay_microseconds: int = 0
    inputs: tuple[TensorConfig, ...] = ()
    outputs: tuple[TensorConfig, ...] = ()
    warmup: WarmupConfig | None = None


@dataclass(frozen=True)
class TritonConfig:
    image: str
    model_repository: str
    models: tuple[TritonModel, ...]
    exit_timeout_seconds: int = 120
    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002
    scale_metric: str | None = None
    """`gpu_utilization` or `requests_per_node`: the node publishes it for the autoscaler; None publishes nothing."""
    sync_image: str = ""
    """The copying container as the node runs it (`SYNC_IMAGES[cloud]` pinned by digest). Default: the tag."""


def _dims(dims: tuple[int, ...]) -> str:
    return "[ " + ", ".join(str(d) for d in dims) + " ]"


def _tensor(tensor: TensorConfig) -> str:
    return f'  {{ name: "{tensor.name}" data_type: {tensor.data_type} dims: {_dims(tensor.dims)} }}'


def config_pbtxt(model: TritonModel) -> str:
    """The model's config.pbtxt (protobuf text format of Triton's ModelConfig)."""
    kind = "backend" if model.platform in BACKEND_PLATFORMS else "platform"
    lines = [f'name: "{model.name}"', f'{kind}: "{BACKEND_PLATFORMS.get(model.platform, model.platform)}"',
             f"max_batch_size: {model.max_batch_size}"]
    for field, tensors in (("input", model.inputs), ("output", model.outputs)):
        if tensors:
            lines += [f"{field} [", ",\n".join(_tensor(t) for t in tensors), "]"]
    if model.preferred_batch_sizes is not None:
        preferred = f"  preferred_batch_size: {_dims(model.preferred_batch_sizes)}\n" if model.preferred_batch_sizes else ""
        lines.append(f"dynamic_batching {{\n{preferred}"
                     f"  max_queue_delay_microseconds: {model.max_queue_delay_microseconds}\n}}")
    lines.append(f"instance_group [ {{ count: {model.instance_count} kind: KIND_GPU }} ]")
    if model.warmup is not None:
        data = "random_data: true" if model.warmup.random else "zero_data: true"
        inputs = "\n".join(f'  inputs {{ key: "{t.name}" value: {{ data_type: {t.data_type} dims: {_dims(t.dims)} '
                           f"{data} }} }}" for t in model.inputs)
        lines.append(f'model_warmup [ {{\n  name: "gpufleet-warmup"\n  batch_size: {model.warmup.batch_size}\n'
                     f"  count: {model.warmup.count}\n{inputs}\n}} ]")
    return "\n".join(lines) + "\n"


def triton_env_items(config: TritonConfig, cloud: str) -> list[tuple[str, str]]:
    return [
        ("GPUFLEET_TRITON_IMAGE", config.image),
        ("GPUFLEET_TRITON_REPOSITORY", config.model_repository),
        ("GPUFLEET_TRITON_SYNC_IMAGE", config.sync_image or SYNC_IMAGES[cloud]),
        ("GPUFLEET_TRITON_CONFIG_DIR", CONFIG_DIR),
        ("GPUFLEET_TRITON_EXIT_TIMEOUT", str(config.exit_timeout_seconds)),
        ("GPUFLEET_TRITON_HTTP_PORT", str(config.http_port)),
        ("GPUFLEET_TRITON_GRPC_PORT", str(config.grpc_port)),
        ("GPUFLEET_TRITON_METRICS_PORT", str(config.metrics_port)),
        *publisher_env_items(config, cloud),
    ]


def publisher_env_items(config: TritonConfig, cloud: str) -> list[tuple[str, str]]:
    if config.scale_metric is None:
        return []
    items = [("GPUFLEET_TRITON_SCALE_METRIC", config.scale_metric), ("GPUFLEET_TRITON_PUBLISH_SECONDS", str(PUBLISH_SECONDS))]
    if cloud == "aws":
        return items + [("GPUFLEET_TRITON_METRIC_NAMESPACE", AWS_METRIC_NAMESPACE),
                        ("GPUFLEET_TRITON_METRIC_NAME", AWS_METRIC_NAMES[config.scale_metric])]
    return items + [("GPUFLEET_TRITON_METRIC_TYPE", GCP_METRIC_TYPES[config.scale_metric])]


def triton_units(config: TritonConfig) -> list[str]:
    """The inference units enabled at install."""
    return [UNIT] + ([METRICS_UNIT] if config.scale_metric else [])


def triton_parts(config: TritonConfig, cloud: str) -> list[Part]:
    """Every file the inference node gets on top of the training node's."""
    header = "Triton Inference Server parameters, written by cloud-init; read by gpufleet-triton.service."
    parts = [Part(TRITON_ENV_PATH, "0644", render_env_file(triton_env_items(config, cloud), header))]
    parts += [Part(f"{CONFIG_DIR}/{model.name}/config.pbtxt", "0644", config_pbtxt(model)) for model in config.models]
    publisher = (*PUBLISHER, PUBLISHER_CLOUD_PART.format(cloud=cloud)) if config.scale_metric else ()
    for relative in STATIC + publisher:
        content = (INFERENCE_DIR / relative).read_text()
        mode = "0755" if content.startswith("#!") else "0644"
        text = shipped(content, relative).replace("cloud_init/files/", "cloud_init/inference/", 1)
        parts.append(Part("/" + relative, mode, text))
    return parts
