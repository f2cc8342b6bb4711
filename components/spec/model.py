"""The cloud-neutral cluster spec, read once from the structured stack config `gpufleet:cluster`.

A five-line spec gives a correct cluster: cloud, region, zone, nodes and a GPU. Every other field has a
safe default, documented on the field. Shape and type errors are caught by pydantic; rules that relate
fields to each other live in `rules.py`, and rules that need the catalog live in `components/catalog`.
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from .existing_network import ExistingNetwork
from .gpudirect import GpuDirectTrust
from .inference import InferenceSpec, Workload, inference_defaults
from .job import JobEstimate
from .lifecycle import CapacityWait, Rollout, UtcTimestamp
from .monitoring import Monitoring
from .node import NodeSoftware
from .permissions import NodePermissions
from .scheduler import INSTANCE_TYPE_PATTERN, PARTITION_PATTERN, Scheduler
from .ssh import parse_public_key
from .storage import Storage
from .strict import Amount, Cidr, Count, StrictModel

Cloud = Literal["aws", "azure", "gcp"]
Fabric = Literal["auto", "efa", "infiniband", "gpudirect", "tcp"]
MarketType = Literal["on-demand", "spot", "mixed"]
ImageKind = Literal["driver-ready", "ubuntu-22.04", "ubuntu-24.04"]

DEFAULT_VPC_CIDR = "10.0.0.0/16"
DEFAULT_ROOT_DISK_GIB = 200
# A group's name is part of its cloud resources' names (GCP: lower case, digits and inner hyphens) and its partition's.
GROUP_NAME_PATTERN = r"^[a-z]([a-z0-9-]{0,13}[a-z0-9])?$"
MAX_NODE_GROUPS = 32
MAX_CLUSTER_NODES = 4096
"""The most nodes one cluster holds, all its node groups together (one group's bound on `nodes`)."""
MAX_FALLBACKS = 8
INTERNAL_FIELDS = frozenset({"nodes_range"})
"""Fields the user writes under another name (`nodes: {min, max}`): kept out of the spec reference."""
InstanceTypeName = Annotated[str, StringConstraints(pattern=INSTANCE_TYPE_PATTERN)]
ZoneName = Annotated[str, StringConstraints(min_length=1, max_length=64)]
GroupName = Annotated[str, StringConstraints(pattern=GROUP_NAME_PATTERN)]
REQUIRED_WITHOUT_GROUPS = ("nodes", "accelerator")
"""Top-level fields a spec needs unless each of its node groups sets them."""


class NodeRange(StrictModel):
    """An elastic node count: Slurm's power saving starts nodes for queued jobs, up to `max`, and releases idle ones
    down to `min` (README "Elastic clusters")."""

    min: Count = Field(ge=0, le=MAX_CLUSTER_NODES, examples=[0])
    """Nodes kept up while the queue is empty, 0 to 4096; 0 pays for no GPU while idle."""
    max: Count = Field(ge=1, le=MAX_CLUSTER_NODES, examples=[16])
    """The most nodes the group grows to, 1 to 4096."""

    @model_validator(mode="after")
    def _min_not_above_max(self):
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is more than max ({self.max}); expected min <= max, "
                             f"e.g. {{min: 0, max: {max(self.max, self.min)}}}")
        return self


def node_range_input(data):
    """`nodes: {min, max}`: the range is kept in `nodes_range` and `nodes` holds `max` (the most nodes the group can
    have, which every count-based rule and the controller's node bound check against); a fixed number stays in
    `nodes` alone. A dumped spec (both keys) reads back unchanged."""
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), dict):
        return data
    wanted = data["nodes"]
    top = wanted.get("max")
    fits = isinstance(top, int) and not isinstance(top, bool) and top >= 1
    return {**data, "nodes": top if fits else None, "nodes_range": wanted}


class Accelerator(StrictModel):
    """What each node carries: a GPU model and count, or an explicit instance type."""

    gpu: str | None = Field(None, examples=["H100"])
    """GPU model, e.g. "H100", "A100-80GB", "L40S". Default: taken from `instance_type`."""
    gpus_per_node: Count | None = Field(None, ge=1, le=64)
    """GPUs per node. Default: the only count the catalog offers for `gpu`, if there is one."""
    instance_type: str | None = None
    """Cloud instance type, e.g. "p5.48xlarge". Default: the cheapest type with `gpu` x `gpus_per_node`."""
    gpu_fraction: Amount | None = Field(None, gt=0, lt=1, examples=[0.25])
    """A vGPU slice of one GPU, e.g. 0.25 (AWS G6f, Azure NVadsA10 v5, GCP G4 fractional sizes), with the GRID guest driver. Default: whole GPUs only."""
    fallback_types: list[InstanceTypeName] = Field(default_factory=list, max_length=MAX_FALLBACKS,
                                                   examples=[["p5e.48xlarge"]])
    """Elastic groups: other instance types a resume tries when the chosen one has no capacity, each with the same GPU model and fabric (a different GPU count only on a group without an RDMA fabric). Checked like the chosen type; the plan lists them in the order they are tried. Default: none."""

    @field_validator("fallback_types")
    @classmethod
    def _fallbacks_differ(cls, types: list[str]) -> list[str]:
        repeated = sorted({name for name in types if types.count(name) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed more than once; expected each type once")
        return types


class Market(StrictModel):
    """How nodes are bought."""

    type: MarketType = "on-demand"
    """Default: "on-demand"."""
    on_demand_base: Count = Field(0, ge=0, le=4096)
    """With "mixed": nodes always bought on demand; the rest are spot. Default: 0."""
    spot_max_price_per_hour: Amount | None = Field(None, ge=0.001, le=10000)
    """Highest spot price per node-hour in USD, 0.001 to 10000. Default: no cap (the on-demand price), as AWS recommends."""
    capacity_reservation_id: str | None = None
    """Run in this reservation (AWS ODCR or Capacity Block id; GCP reservation name, which on-demand A4X, A4 and A3 Ultra need). Default: no reservation."""
    capacity_block: bool = False
    """The reservation is an AWS Capacity Block for ML. Default: false."""
    capacity_block_start: UtcTimestamp | None = None
    """Capacity Block start (UTC, e.g. "2026-12-10T11:30:00Z"): the fleet scales to `nodes` then. Required with `capacity_block`."""
    capacity_block_end: UtcTimestamp | None = None
    """Capacity Block end (UTC): the fleet scales to 0 forty minutes before, ahead of AWS's own terminations 30 minutes before. Required with `capacity_block`."""
    wait_for_capacity_timeout: CapacityWait = "0"
    """AWS: how long `pulumi up` waits for the fleet's nodes ("0" = not at all, or e.g. "20m"). Default: "0", so scarce capacity never fails `pulumi up`; the group keeps trying to launch on its own."""

    @model_validator(mode="before")
    @classmethod
    def _accept_shorthand(cls, value):
        """`market: spot` is short for `market: {type: spot}`."""
        return {"type": value} if isinstance(value, str) else value


class Image(StrictModel):
    """The boot image."""

    kind: ImageKind = "driver-ready"
    """"driver-ready" (AWS DLAMI, Azure HPC image, GCP Deep Learning VM) or stock Ubuntu. Default: "driver-ready"."""
    id: str | None = None
    """Pin an exact image (AMI id, image URN or self link) of the given `kind`. Default: the newest image of `kind`, resolved at deploy time and pinned (see `track`)."""
    track: Literal["pinned", "latest"] = "pinned"
    """"pinned": the image is resolved once per `pulumi up` and every node launched until the next one boots exactly that image. "latest": let the cloud resolve the newest image at each launch (replacements may differ from running nodes). Default: "pinned"."""


class Access(NodePermissions):
    """Who may reach the nodes. Everything is closed unless listed here."""

    ssh_public_key: str | None = None
    """OpenSSH public key for the default user. Default: none (use SSM, IAP or Bastion)."""
    ssh_cidrs: list[Cidr] = Field(default_factory=list, examples=[["203.0.113.0/24"]])
    """CIDRs allowed to reach port 22. Default: none."""
    allow_ssh_from_anywhere: bool = False
    """Explicit opt-in required before `ssh_cidrs` may contain 0.0.0.0/0. Default: false."""
    monitoring_cidrs: list[Cidr] = Field(default_factory=list)
    """CIDRs allowed to scrape the exporters (9400, 9100) besides the cluster. Default: none."""
    allow_monitoring_from_anywhere: bool = False
    """Explicit opt-in required before `monitoring_cidrs` may contain 0.0.0.0/0. Default: false."""

    @field_validator("ssh_public_key")
    @classmethod
    def _is_openssh_key(cls, key: str | None) -> str | None:
        if key is not None:
            parse_public_key(key)  # ValueError says what is wrong
        return key


class Network(ExistingNetwork):
    """Private networking for the nodes."""

    cidr: Cidr = IPv4Network(DEFAULT_VPC_CIDR)
    """Address range of the VPC/VNet gpufleet creates. Default: 10.0.0.0/16."""
    existing_subnet_id: str | None = None
    """Use this subnet instead of creating a network. Default: gpufleet creates one private subnet with NAT egress."""


class NodeGroup(StrictModel):
    """One kind of node in the cluster: its own fleet and, with Slurm, its own partition. A field the group leaves
    out takes the cluster's value (the top-level field of the same name): `node` is merged key by key, the other
    fields replace the cluster's value whole."""

    _node_range = model_validator(mode="before")(node_range_input)
    nodes: Count | None = Field(None, ge=1, le=4096)
    """Nodes in this group, 1 to 4096, or `{min, max}` for an elastic group (with Slurm: README "Elastic clusters"). Default: the cluster's `nodes`."""
    nodes_range: NodeRange | None = None
    """Written as `nodes: {min, max}`."""
    accelerator: Accelerator | None = None
    """This group's GPU or instance type (as the top-level `accelerator`). Default: the cluster's."""
    market: Market | None = None
    """How this group's nodes are bought (as the top-level `market`). Default: the cluster's."""
    image: Image | None = None
    """This group's boot image (as the top-level `image`). Default: the cluster's."""
    root_disk_gib: Count | None = Field(None, ge=30, le=16384)
    """This group's root volume size. Default: the cluster's `root_disk_gib`."""
    node: NodeSoftware | None = None
    """Node software for this group (as the top-level `node`), merged key by key over the cluster's. Default: the cluster's."""
    slurm_partition: str | None = Field(None, pattern=PARTITION_PATTERN, examples=["train", "debug"])
    """The Slurm partition this group's nodes form. Default: the group's name."""
    slurm_default: bool = False
    """This group's partition is Slurm's default (jobs that name no partition run there). Default: the first group by name."""


class ClusterSpec(StrictModel):
    """A GPU cluster, described once for any cloud."""

    cloud: Cloud
    """Which cloud: "aws", "azure" or "gcp"."""
    region: str = Field(min_length=1)
    """Cloud region, e.g. "us-east-2", "eastus", "us-central1"."""
    zone: str | None = None
    """Availability zone. Required on AWS and GCP: RDMA fabrics do not cross zones, and a changed zone replaces every node."""
    fallback_zones: list[ZoneName] = Field(default_factory=list, max_length=MAX_FALLBACKS, examples=[["us-east-1b"]])
    """Elastic groups without placement: other zones of the region a resume tries, after every type in `zone`, when capacity runs out. Default: none."""
    _node_range = model_validator(mode="before")(node_range_input)
    nodes: Count | None = Field(None, ge=1, le=4096)
    """Number of GPU nodes, 1 to 4096, or `{min: 0, max: 16}` for an elastic group that Slurm grows with its queue and shrinks to `min` when idle (on AWS, Azure and GCP: README "Elastic clusters"). Changing it touches only the fleet. Required, unless every node group sets its own."""
    nodes_range: NodeRange | None = None
    """Written as `nodes: {min, max}`."""
    accelerator: Accelerator | None = None
    """What each node carries. Required, unless every node group sets its own."""
    market: Market = Field(default_factory=Market)
    fabric: Fabric = "auto"
    """RDMA fabric. Default: "auto": the instance type's RDMA fabric when it has one (even for one node, so growing the cluster changes only its size), else TCP."""
    gpudirect: GpuDirectTrust = Field(default_factory=GpuDirectTrust)
    placement_group: bool | None = None
    """Cluster placement. Default: on for multi-node clusters and any cluster on an RDMA fabric, off inside a Capacity Block."""
    placement_group_name: str | None = Field(None, min_length=1, max_length=255)
    """AWS: launch into this existing cluster placement group (e.g. the one an On-Demand Capacity Reservation lives in) instead of creating one. Default: none."""
    placement_max_distance: Count | None = Field(None, ge=1, le=3)
    """GCP compact placement: most network hops between nodes (1 = same rack ... 3 = same cluster). Default: the family's catalog default."""
    image: Image = Field(default_factory=Image)
    access: Access = Field(default_factory=Access)
    network: Network = Field(default_factory=Network)
    root_disk_gib: Count = Field(DEFAULT_ROOT_DISK_GIB, ge=30, le=16384)
    """Encrypted root volume size. Default: 200."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Added to every resource besides gpufleet's provenance tags. Default: none."""
    node: NodeSoftware = Field(default_factory=NodeSoftware)
    rollout: Rollout = Field(default_factory=Rollout)
    storage: Storage = Field(default_factory=Storage)
    workload: Workload = "training"
    """"training", or "inference": Triton behind an internal load balancer (see `inference`). Default: "training"."""
    inference: InferenceSpec | None = None
    """With `workload: inference`: model repository, models, Triton version, autoscaling (README "Inference")."""
    _inference_defaults = model_validator(mode="before")(inference_defaults)
    monitoring: Monitoring = Field(default_factory=Monitoring)
    job: JobEstimate | None = None
    """An MLPerf workload the plan prices per job (cost and hours on this cluster) beside the hourly cost. Default: none."""
    scheduler: Scheduler = Field(default_factory=Scheduler)
    node_groups: dict[GroupName, NodeGroup] | None = Field(None, min_length=1, max_length=MAX_NODE_GROUPS)
    """Several kinds of node in one cluster, by group name (lower case, digits and hyphens, up to 15 characters): each group its own fleet and Slurm partition, the top-level fields its defaults (README "Node groups"). Default: one group, the top-level fields."""
