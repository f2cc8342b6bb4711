"""Node software options: what cloud_init installs and configures on every GPU node.

These fields are read by `cloud_init` through the cloud component, never directly from stack config.
Each field documents its default; compatibility between fields (driver/CUDA, MIG/MPS) is checked in
`components/spec/node_rules.py` against the catalog's GPU facts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .strict import Count, DigitsText, StrictModel, VersionText

DEFAULT_DRIVER_BRANCH = "580"
DEFAULT_CUDA = "13.0"
DEFAULT_DRAIN_COMMAND = "systemctl kill --signal=SIGTERM gpufleet-jobs.slice"


class DriverOptions(StrictModel):
    """The NVIDIA driver gpufleet installs on stock Ubuntu images. Driver-ready images keep their own driver, which
    the node checks against `cuda` at boot."""

    branch: DigitsText = Field(DEFAULT_DRIVER_BRANCH, pattern=r"^\d{3}$", examples=["580", "595"])
    """Driver branch (major version), refused at plan time when past NVIDIA's end of life. Default: "580", a
    long-term support branch (EOL June 2028)."""
    flavor: Literal["auto", "open", "proprietary"] = "auto"
    """Kernel module flavor. Default: "auto": open modules from Ampere on (Blackwell requires them), proprietary on
    Turing and older."""
    grid_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    """vGPU slices: the SHA-256 of the GRID guest driver file the node downloads, checked before it runs. Required on Azure, which publishes no checksum for it; elsewhere checked on top of the bucket listing's MD5. Default: none."""


class IsolationOptions(StrictModel):
    """The cgroup v2 slice that GPU jobs run in (`gpufleet-run` starts a job in it)."""

    enabled: bool = True
    """Default: true."""
    memory_max_percent: Count = Field(90, ge=10, le=100)
    """MemoryMax of the job slice as a share of node RAM. Default: 90."""
    cpu_quota_percent: Count | None = Field(None, ge=1, le=102400)
    """CPUQuota of the slice (100 = one core). Default: no quota."""
    allowed_cpus: str | None = Field(None, max_length=256, pattern=r"^\d{1,4}(-\d{1,4})?(,\d{1,4}(-\d{1,4})?)*$", examples=["0-95", "0-47,96-143"])
    """AllowedCPUs of the slice, e.g. "0-95". Default: all CPUs."""


class MpsOptions(StrictModel):
    """CUDA Multi-Process Service control daemon."""

    enabled: bool = False
    """Default: false."""
    active_thread_percentage: Count | None = Field(None, ge=1, le=100)
    """Default active-thread percentage for MPS clients. Default: 100 (no limit)."""


class MigOptions(StrictModel):
    """MIG partitioning applied at boot to every GPU of the node."""

    profiles: list[str] = Field(default_factory=list, max_length=7, examples=[["3g.40gb", "3g.40gb"]])
    """GPU-instance profiles per GPU, e.g. ["3g.40gb", "3g.40gb"]. Default: none (MIG disabled)."""


class NcclOptions(StrictModel):
    """NCCL environment written to /etc/nccl.conf and /etc/profile.d."""

    debug: Literal["", "WARN", "INFO", "VERSION", "TRACE"] = "WARN"
    """NCCL_DEBUG. Default: "WARN"."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra or overriding variables for NCCL and its plugins: names starting with NCCL_, FI_, OFI_NCCL_, UCX_,
    TORCH_NCCL_ or CUDA_. Default: none."""


class ExporterOptions(StrictModel):
    """Prometheus exporters on every node, reachable only from the cluster and `access.monitoring_cidrs`."""

    dcgm: bool = True
    """dcgm-exporter on port 9400. Default: true."""
    node: bool = True
    """node_exporter on port 9100. Default: true."""


class PerformanceOptions(StrictModel):
    """The node measures its own speed at boot and compares it with what its type should deliver
    (components/bench/data/expected.yaml: copy bandwidth, matrix-multiply rate, intra-node all-reduce)."""

    enabled: bool = False
    """Run the measurements the image supports (nvbandwidth or bandwidthTest or PyTorch; PyTorch or dcgmproftester;
    nccl-tests) and mark the node unhealthy below a figure. A figure without a published source, or a tool missing
    from the image, is reported as not compared. Default: false."""
    tolerance: float | None = Field(None, gt=0, le=1)
    """The fraction of each figure a node must reach, e.g. 0.9. Default: 1.0 for figures that are published
    thresholds, 0.8 for figures that are published runs (see the README's "Proven fast" section)."""


class HealthOptions(StrictModel):
    """The acceptance check that runs at boot before a node counts as ready."""

    dcgm_diag: bool = False
    """Also run `dcgmi diag -r 1`. Default: false."""
    nccl_allreduce: bool = False
    """Also run a single-node NCCL all-reduce. nccl-tests' `all_reduce_perf` must be on the image's PATH (gpufleet
    does not install it; without it the node fails its check). Default: false."""
    performance: PerformanceOptions = Field(default_factory=PerformanceOptions)


class SpotOptions(StrictModel):
    """The interruption watcher on spot nodes."""

    drain_command: str = DEFAULT_DRAIN_COMMAND
    """Run once when the node is about to leave: a cloud's interruption or termination notice, the AWS group's
    termination hook, or a shutdown without a notice. It has 110 s, or less where the notice says when its action
    takes effect (it then ends 10 s before, never under 10 s): `$GPUFLEET_DRAIN_SECONDS` holds its budget. Default:
    SIGTERM to every job in the GPU job slice."""
    drain_on_rebalance: bool = False
    """Drain already at an AWS rebalance recommendation, which may come well before (or without) the group
    terminating the node. Default: false: the recommendation is logged, and the node drains when the group
    terminates it (its termination lifecycle hook)."""


class NodeSoftware(StrictModel):
    """Software on every node. Default: a driver-verified, container-ready node with exporters and health checks."""

    driver: DriverOptions = Field(default_factory=DriverOptions)
    cuda: VersionText = Field(DEFAULT_CUDA, pattern=r"^\d{2}\.\d$", examples=["13.0", "12.8"])
    """CUDA version the jobs use (major.minor), checked against the driver branch. Default: "13.0"."""
    container_runtime: Literal["docker", "containerd", "none"] = "docker"
    """Runtime configured with `nvidia-ctk`. Default: "docker"."""
    isolation: IsolationOptions = Field(default_factory=IsolationOptions)
    mps: MpsOptions = Field(default_factory=MpsOptions)
    mig: MigOptions = Field(default_factory=MigOptions)
    nccl: NcclOptions = Field(default_factory=NcclOptions)
    exporters: ExporterOptions = Field(default_factory=ExporterOptions)
    health: HealthOptions = Field(default_factory=HealthOptions)
    spot: SpotOptions = Field(default_factory=SpotOptions)
