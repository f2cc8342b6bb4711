"""Elastic node groups on Azure: a Uniform scale set at capacity 0 per target, and what the Slurm controller's power
programs (`gpufleet.cloud_init.power.azure`) need to grow them and delete their instances by id, and nothing more.

- Targets: the group's zone, then each of its `fallback_zones` (never on an InfiniBand group: it is placed); in each zone the chosen type, then each of its
  `accelerator.fallback_types` (a resume tries the next type, then the next zone). Each target is its own scale set
  (a scale set has one size and one zone list), named `{name}[-{group}]-nodes` for the first and
  `...-nodes-<zone>-<size>` for the others (so a changed fallback list never renames another target's scale set) (fallback types are refused on an InfiniBand group: InfiniBand links do not cross scale sets, and a
  resume may split a job's nodes between targets), with a physical name gpufleet chooses (`scale_set_name`): the controller's power config names each
  scale set by its id, built as a string from the subscription, resource group and that name, so the controller
  never waits on a scale set and the scale sets (whose tags name the controller's address) never wait on it.
- Capacity: 0 at creation and ignored afterwards (`ignore_changes: sku.capacity`): the programs raise it by the
  nodes a resume starts and delete released instances by id (Delete Instances, which lowers it by exactly them), so a
  `pulumi up` while nodes are up never scales them back to 0. Overprovisioning is off (it creates and deletes
  extra instances).
- Nothing on Azure's side deletes or replaces a node by itself: automatic repairs are off (a repair replaces the
  instance under a new instance id, without the user-data line that names its Slurm node, while Slurm still counts
  the old node; a node that fails its acceptance check never registers, ResumeTimeout marks it DOWN and
  ResumeFailProgram deletes it), Spot Try & restore is off (it would start unnamed instances to refill a capacity
  the programs own), no autoscale setting is attached, and the upgrade policy stays Manual (`rollout.enabled`, which
  reimages nodes that may run jobs, is refused for elastic groups: a resumed node always boots the current model).
  The health extension stays, so an instance's health is still visible.
- Naming: a resumed instance's Slurm node is the `gpufleet-slurm-node=<node>` line the resume program writes into
  the instance's user data (cloud_init `slurm/node-name` reads it from IMDS `compute/userData`).
- Least privilege (`power_roles.py`): the controller's identity gets a custom role with the actions the programs
  call, assigned on each elastic scale set only (Microsoft.Compute "virtualMachineScaleSets/read", "/write" for the
  capacity, "/delete/action" (Delete Instances), "/virtualMachines/read" and "/write" for an instance's user data);
  a read-only role with "Microsoft.Compute/locations/operations/read" on the resource group (the status URL of an
  asynchronous operation, `Azure-AsyncOperation`, is not under the scale set, and Azure Resource Manager checks it
  at the resource group: "Track asynchronous Azure operations", "Permission for tracking async status"); and the
  network joins a write on a scale-set VM is checked for (linked access check), on the subnet, NSG and nodes' ASG
  only. Never Contributor or Virtual Machine Contributor, never a writer on the resource group or subscription
  (policy rule `azure-scale-set-writers-scoped`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpufleet.cloud_init.power.config import AzureApi, AzureGroup, AzureTarget, PowerConfig, PowerGroup

from ..catalog.loader import load_catalog
from ..catalog.models import InstanceType
from ..pipeline import ClusterPlan
from ..scheduler.elastic import node_prefix
from ..spec.errors import Problem
from .fabric import infiniband_partition

SCALE_SET_NAME_MAX = 64
METRICS_FILE = "/var/lib/prometheus/node-exporter/gpufleet-power.prom"


@dataclass(frozen=True)
class ElasticTarget:
    """One scale set of an elastic group: its size, zone ("" for a regional scale set) and names."""

    instance: InstanceType
    zone: str
    role: str
    """The child's name suffix: `nodes`, `nodes-2-nc24ads-a100-v4`, ..."""
    scale_set_name: str


def is_elastic(plan: ClusterPlan) -> bool:
    return plan.spec.nodes_range is not None and plan.spec.scheduler.kind == "slurm"


def elastic_azure_problems(plans: Sequence[ClusterPlan]) -> list[Problem]:
    """What an Azure elastic group cannot be, at the field."""
    problems = []
    for plan in plans:
        if not is_elastic(plan):
            continue
        where = f"node_groups.{plan.group}." if plan.group else ""
        if plan.spec.market.type == "mixed":
            problems.append(Problem(f"{where}market.type", "mixed", "an Azure elastic group starts each node on one "
                                    "market, on demand or spot: set `market.type: on-demand` or `spot`"))
        if plan.fallbacks and infiniband_partition(plan.spec, plan.instance) is not None:
            problems.append(Problem(f"{where}accelerator.fallback_types", list(plan.spec.accelerator.fallback_types),
                                    "each Azure scale set is its own InfiniBand partition, so a job's nodes on a "
                                    "fallback type's scale set could not reach the others over InfiniBand: drop "
                                    "`fallback_types` on an InfiniBand group, or set `fabric: tcp`"))
        if plan.spec.rollout.enabled:
            problems.append(Problem(f"{where}rollout.enabled", True, "an Azure elastic group's nodes boot the "
                                    "current model whenever Slurm resumes them, and a rolling upgrade would reimage "
                                    "nodes that run jobs: set `rollout.enabled: false`"))
    return problems


def zones(plan: ClusterPlan) -> list[str]:
    return list(dict.fromkeys([plan.spec.zone or "", *plan.spec.fallback_zones]))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def target_key(size: str, zone: str) -> str:
    """A fallback target's own name part, `<zone>-<size>` (e.g. `2-nc48ads-a100-v4`): adding, dropping or
    reordering fallbacks never renames (so never replaces) another target's scale set."""
    return f"{zone or 'regional'}-{_slug(size.removeprefix('Standard_'))}"


def scale_set_name(stack: str, group_name: str, unique: str, key: str) -> str:
    """`<stack>-<name>[-<group>]-<hash>-<key>`: unique per resource group (the hash is the cluster's), at most 64;
    `key` is `0` for the group's first target, else 6 hex digits of the target's `target_key`."""
    tail = f"-{unique}-{key if key == '0' else hashlib.sha256(key.encode()).hexdigest()[:6]}"
    return _slug(f"{stack}-{group_name}")[:SCALE_SET_NAME_MAX - len(tail)].strip("-") + tail


def elastic_targets(plan: ClusterPlan, stack: str, group_name: str, unique: str) -> list[ElasticTarget]:
    """In the order a resume tries them: per zone, the chosen type then its fallbacks. The first target keeps the
    fixed group's child name (`nodes`); the others are named by their zone and size (`nodes-<target_key>`)."""
    catalog = load_catalog()
    types = [plan.instance, *(catalog.instance(plan.spec.cloud, name) for name in plan.fallbacks)]
    pairs = [(instance, zone) for zone in zones(plan) for instance in types if instance is not None]
    targets = []
    for index, (instance, zone) in enumerate(pairs):
        key = "0" if index == 0 else target_key(instance.name, zone)
        targets.append(ElasticTarget(instance, zone, "nodes" if index == 0 else f"nodes-{key}",
                                     scale_set_name(stack, group_name, unique, key)))
    return targets


def scale_set_id(subscription: str, resource_group: str, name: str) -> str:
    return (f"/subscriptions/{subscription}/resourceGroups/{resource_group}/providers/Microsoft.Compute/"
            f"virtualMachineScaleSets/{name}")


def power_node_prefix(plan: ClusterPlan) -> str:
    return node_prefix(plan.cluster_name, plan.group)


def power_group(plan: ClusterPlan, targets: Sequence[ElasticTarget], subscription: str,
                resource_group: str) -> PowerGroup:
    range_ = plan.spec.nodes_range
    assert range_ is not None
    return PowerGroup(
        name=plan.group or plan.spec.scheduler.slurm.partition, partition=plan.spec.scheduler.slurm.partition,
        node_prefix=power_node_prefix(plan), max_nodes=range_.max, min_nodes=range_.min,
        azure=AzureGroup(targets=tuple(AzureTarget(scale_set_id=scale_set_id(subscription, resource_group,
                                                                             target.scale_set_name),
                                                   vm_size=target.instance.name, zone=target.zone)
                                       for target in targets)))


def power_config(cluster_id: str, groups: Sequence[tuple[ClusterPlan, Sequence[ElasticTarget]]], subscription: str,
                 resource_group: str, metrics: bool) -> PowerConfig:
    """The controller's system-assigned identity answers IMDS without a client id."""
    return PowerConfig(cloud="azure", cluster_id=cluster_id, azure=AzureApi(),
                       groups=tuple(power_group(plan, targets, subscription, resource_group)
                                    for plan, targets in groups),
                       metrics_file=METRICS_FILE if metrics else "")
