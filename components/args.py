"""`GpuClusterArgs`: the typed input of every gpufleet cluster component, in Python and through the package.

The fields mirror the stack file's `gpufleet:cluster` mapping (README "Spec reference" documents every field and
its default) without `cloud`, which the component's class decides. Values that usually come from other resources
are `pulumi.Input`s: `network.existing_subnet_id`, `access.ssh_public_key`, `image.id`, the values of `tags`, and
the elements of `access.iam_policy_arns`. Everything else is a plain value, because it decides which resources exist (node count,
instance type, fabric, placement) and is checked before anything is declared.

These are TypedDicts on purpose: the package host (`gpufleet.provider`) hands a component a plain dict of args,
and Pulumi's Analyzer derives the package schema (camelCase) from these annotations and docstrings.
"""

# No `from __future__ import annotations` here: Pulumi's Analyzer reads these annotations as real types.
from typing import Any, TypedDict

import pulumi
from typing_extensions import NotRequired


class AcceleratorArgs(TypedDict):
    """What each node carries: a GPU model and count, or an explicit instance type."""

    gpu: NotRequired[str]
    """GPU model, e.g. "H100", "A100-80GB", "L40S". Default: taken from `instance_type`."""
    gpus_per_node: NotRequired[int]
    """GPUs per node. Default: the only count the catalog offers for `gpu`, if there is one."""
    instance_type: NotRequired[str]
    """Cloud instance type, e.g. "p5.48xlarge". Default: the cheapest type with `gpu` x `gpus_per_node`."""
    gpu_fraction: NotRequired[float]
    """A vGPU slice of one GPU, e.g. 0.25 (AWS G6f, Azure NVadsA10 v5, GCP G4 fractional sizes), with the GRID guest driver. Default: whole GPUs only."""
    fallback_types: NotRequired[list[str]]
    """Elastic groups: other instance types a resume tries when the chosen one has no capacity, each with the same GPU model and fabric. Default: none."""


class NodeRangeArgs(TypedDict):
    """An elastic group's size: Slurm grows it with its queue up to `max` and shrinks it to `min` when idle."""

    min: int
    """Nodes kept up when the queue is empty, 0 or more."""
    max: int
    """The most nodes the group may have, 1 to 4096."""


class MarketArgs(TypedDict):
    """How nodes are bought."""

    type: NotRequired[str]
    """"on-demand", "spot" or "mixed". Default: "on-demand"."""
    on_demand_base: NotRequired[int]
    """With "mixed": nodes always bought on demand; the rest are spot. Default: 0."""
    spot_max_price_per_hour: NotRequired[float]
    """Highest spot price per node-hour in USD. Default: no cap (the on-demand price)."""
    capacity_reservation_id: NotRequired[str]
    """Run in this reservation (AWS ODCR or Capacity Block id; GCP reservation name, which on-demand A4X, A4 and A3 Ultra need). Default: no reservation."""
    capacity_block: NotRequired[bool]
    """The reservation is an AWS Capacity Block for ML. Default: false."""
    capacity_block_start: NotRequired[str]
    """Capacity Block start, UTC (e.g. "2026-12-10T11:30:00Z"). Required with `capacity_block`."""
    capacity_block_end: NotRequired[str]
    """Capacity Block end, UTC. Required with `capacity_block`."""
    wait_for_capacity_timeout: NotRequired[str]
    """AWS: how long `pulumi up` waits for the fleet's nodes ("0" or e.g. "20m"). Default: "0"."""


class ImageArgs(TypedDict):
    """The boot image."""

    kind: NotRequired[str]
    """"driver-ready", "ubuntu-22.04" or "ubuntu-24.04". Default: "driver-ready"."""
    id: NotRequired[pulumi.Input[str]]
    """Pin an exact image of `kind` (AMI id, image URN or self link); on AWS it may come from another resource. Default: the newest image of `kind`, resolved at deploy time and pinned."""
    track: NotRequired[str]
    """"pinned" or "latest". Default: "pinned"."""


class AccessArgs(TypedDict):
    """Who may reach the nodes. Everything is closed unless listed here."""

    ssh_public_key: NotRequired[pulumi.Input[str]]
    """OpenSSH public key for the default user; may come from another resource. Default: none (use SSM, IAP or Bastion)."""
    ssh_cidrs: NotRequired[list[str]]
    """CIDRs allowed to reach port 22. Default: none."""
    allow_ssh_from_anywhere: NotRequired[bool]
    """Explicit opt-in required before `ssh_cidrs` may contain 0.0.0.0/0. Default: false."""
    monitoring_cidrs: NotRequired[list[str]]
    """CIDRs allowed to scrape the exporters besides the cluster. Default: none."""
    allow_monitoring_from_anywhere: NotRequired[bool]
    """Explicit opt-in required before `monitoring_cidrs` may contain 0.0.0.0/0. Default: false."""
    iam_policy_arns: NotRequired[list[pulumi.Input[str]]]
    """AWS: IAM policy ARNs attached to the node role (each may come from another resource), e.g. read access to a dataset bucket. Default: none."""
    role_assignments: NotRequired[list[dict[str, Any]]]
    """Azure: `{role, scope}` assignments for the scale set's managed identity. Default: none."""
    service_account_roles: NotRequired[list[dict[str, Any]]]
    """GCP: `{role, bucket?}` roles for the node service account (project level unless a bucket is named). Default: none."""
    allow_admin: NotRequired[bool]
    """Explicit opt-in before admin policies or roles (AdministratorAccess, Owner, roles/owner, ...). Default: false."""
    container_registry_read: NotRequired[bool]
    """Let nodes pull images: AWS ECR read-only, Azure AcrPull, GCP Artifact Registry reader. Default: false."""
    buckets_read: NotRequired[list[str]]
    """Read-only access to these buckets (S3, GCS; on Azure a storage account resource id). Default: none."""


class NetworkArgs(TypedDict):
    """Private networking for the nodes."""

    cidr: NotRequired[str]
    """Address range of the VPC/VNet gpufleet creates. Default: 10.0.0.0/16."""
    existing_subnet_id: NotRequired[pulumi.Input[str]]
    """Use this subnet (e.g. from a network stack's StackReference) instead of creating a network; AWS and Azure. Default: gpufleet creates one private subnet with NAT egress."""
    existing_vpc_id: NotRequired[str]
    """AWS: create the node subnet, NAT and routes in this VPC (`cidr` must be a free range inside it). Default: gpufleet creates a VPC."""
    existing_resource_group: NotRequired[str]
    """Azure: put every resource in this resource group instead of a new one. Default: gpufleet creates one."""
    existing_network: NotRequired[str]
    """GCP: the primary NIC's VPC (name or self link); requires `existing_subnetwork`. Default: gpufleet creates one."""
    existing_subnetwork: NotRequired[str]
    """GCP: the primary NIC's subnetwork (name or self link) in `region`. Default: gpufleet creates one."""


class NodeGroupArgs(TypedDict):
    """One kind of node in the cluster, its own fleet and Slurm partition; a field left out takes the cluster's."""

    nodes: NotRequired[int]
    """Nodes in this group, 1 to 4096. Default: the cluster's `nodes`."""
    nodes_range: NotRequired[NodeRangeArgs]
    """Instead of `nodes`: an elastic group (with Slurm), the stack file's `nodes: {min, max}`. Default: a fixed count."""
    accelerator: NotRequired[AcceleratorArgs]
    """This group's GPU or instance type. Default: the cluster's."""
    market: NotRequired[MarketArgs]
    """How this group's nodes are bought. Default: the cluster's."""
    image: NotRequired[ImageArgs]
    """This group's boot image. Default: the cluster's."""
    root_disk_gib: NotRequired[int]
    """This group's root volume size. Default: the cluster's."""
    node: NotRequired[dict[str, Any]]
    """Node software for this group, merged key by key over the cluster's `node`. Default: the cluster's."""
    slurm_partition: NotRequired[str]
    """The Slurm partition this group's nodes form. Default: the group's name."""
    slurm_default: NotRequired[bool]
    """This group's partition is Slurm's default. Default: the first group by name."""


class GpuClusterArgs(TypedDict):
    """A GPU cluster on the component's cloud: the stack file's `gpufleet:cluster` mapping without `cloud`."""

    region: str
    """Cloud region, e.g. "us-east-2", "eastus", "us-central1"."""
    zone: NotRequired[str]
    """Availability zone. Required on AWS and GCP: RDMA fabrics do not cross zones."""
    nodes: NotRequired[int]
    """Number of GPU nodes, 1 to 4096. Changing it touches only the fleet. Required unless every node group sets its own."""
    nodes_range: NotRequired[NodeRangeArgs]
    """Instead of `nodes`: an elastic group that Slurm grows with its queue (README "Elastic clusters"), the stack file's `nodes: {min, max}`. Default: a fixed count."""
    fallback_zones: NotRequired[list[str]]
    """Elastic groups without placement: other zones of the region a resume tries when capacity runs out. Default: none."""
    accelerator: NotRequired[AcceleratorArgs]
    """The GPU (model and count) or the instance type. Required unless every node group sets its own."""
    market: NotRequired[MarketArgs]
    """How nodes are bought. Default: on demand."""
    fabric: NotRequired[str]
    """"auto", "efa", "infiniband", "gpudirect" or "tcp". Default: "auto" (the instance type's RDMA fabric)."""
    gpudirect: NotRequired[dict[str, Any]]
    """GCP A3 Mega GPUDirect-TCPXO: what the user trusts for it (`trust_google_images`, `allow_secure_boot_off`, optional digests): the `gpudirect` section of the spec reference. Default: nothing trusted (NCCL over TCP on the GPU NICs)."""
    placement_group: NotRequired[bool]
    """Cluster placement. Default: on for multi-node clusters and RDMA fabrics."""
    placement_group_name: NotRequired[str]
    """AWS: launch into this existing cluster placement group. Default: none."""
    placement_max_distance: NotRequired[int]
    """GCP compact placement: most network hops between nodes (1 to 3). Default: the family's catalog default."""
    image: NotRequired[ImageArgs]
    """The boot image. Default: the driver-ready image, pinned at deploy time."""
    access: NotRequired[AccessArgs]
    """SSH and monitoring access. Default: everything closed."""
    network: NotRequired[NetworkArgs]
    """Private networking. Default: a new VPC/VNet with one private subnet and NAT egress."""
    root_disk_gib: NotRequired[int]
    """Encrypted root volume size. Default: 200."""
    tags: NotRequired[dict[str, pulumi.Input[str]]]
    """Added to every resource besides gpufleet's provenance tags; on AWS and Azure the values may come from other resources. Default: none."""
    node: NotRequired[dict[str, Any]]
    """Node software (driver, CUDA, container runtime, MPS/MIG, NCCL, exporters, health, spot): the `node` section of the spec reference. Default: the catalog's driver and CUDA for the GPU."""
    rollout: NotRequired[dict[str, Any]]
    """Roll-outs of changed images or user data: the `rollout` section of the spec reference. Default: none (running nodes are kept)."""
    storage: NotRequired[dict[str, Any]]
    """Shared filesystem and local NVMe scratch: the `storage` section of the spec reference. Default: none."""
    workload: NotRequired[str]
    """"training", or "inference": Triton behind an internal load balancer (see `inference`). Default: "training"."""
    inference: NotRequired[dict[str, Any]]
    """With `workload: inference`: model repository, models, Triton version, autoscaling (the `inference` section of the spec reference). Default: none."""
    monitoring: NotRequired[dict[str, Any]]
    """Alerts and the monitoring server (Prometheus, Alertmanager, Grafana): the `monitoring` section of the spec reference. Default: exporters and rules only, no server."""
    job: NotRequired[dict[str, Any]]
    """An MLPerf workload (`mlperf`, `samples`) the plan prices per job beside the hourly cost. Default: none."""
    scheduler: NotRequired[dict[str, Any]]
    """A Slurm controller over the nodes (`kind: slurm`): the `scheduler` section of the spec reference. Default: no scheduler."""
    node_groups: NotRequired[dict[str, NodeGroupArgs]]
    """Several kinds of node in one cluster, by group name: each its own fleet and Slurm partition, the fields above its defaults. Default: one group."""

