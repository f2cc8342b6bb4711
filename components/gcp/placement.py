"""A compact placement resource policy keeps the nodes on nearby hosts (`collocation: COLLOCATED`).

`max_distance` bounds the network hops between nodes (1 = same rack ... 3 = same cluster) and caps how many
VMs one policy may hold. The allowed distances, their caps and the default come from the catalog row's
`placement` facts (reference 3.3: Slurm-GCP chunk sizes 1 -> 22, 2 -> 256 on A3 / 150, 3 -> 1500; "A3 machines do
not support a placement_max_distance of 1"). A family without distances (G2) gets best-effort compact placement.
`vm_count` is not set, so the policy does not change when `nodes` does; only the instance group's size does.
For the same reason a machine type with a GPU fabric gets its policy even as a single node (the selector's
`placement_group` default): the template names the policy, so adding it later would replace the template.
Compact placement requires onHostMaintenance TERMINATE and no automatic restart, which GPU nodes use anyway.

Managed instance groups of A3 High (8 GPUs), A3 Mega, A3 Ultra, A4 and A4X take a workload policy instead
(Compute Engine "About workload policies in MIGs" and "Compact placement policy and workload policy overview": for
MIGs of these series, use workload policies; A4X requires one): type HIGH_THROUGHPUT with `max_topology_distance`
(sub-block, block or cluster for distances 1, 2 and 3), attached to the group rather than the template.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from ..catalog.models import InstanceType
from ..catalog.selector import Selection
from ..spec.errors import Problem
from .labels import Describer

COLLOCATED = "COLLOCATED"
HIGH_THROUGHPUT = "HIGH_THROUGHPUT"
WORKLOAD_POLICY_MACHINE_TYPES = ("a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g", "a4x-")
TOPOLOGY_DISTANCES = {1: "SUBBLOCK", 2: "BLOCK", 3: "CLUSTER"}


def uses_workload_policy(instance: InstanceType) -> bool:
    """Whether Google documents a workload policy (on the group) rather than compact placement for this type."""
    return instance.name.startswith(WORKLOAD_POLICY_MACHINE_TYPES)


@dataclass(frozen=True)
class PlacementPlan:
    """The policy gpufleet declares: `max_distance` None means best effort, and `max_vms` is its capacity."""

    max_distance: int | None
    max_vms: int


def placement_plan(instance: InstanceType, max_distance: int | None = None) -> PlacementPlan:
    """The catalog's default distance for `instance` unless one is given; its VM cap from the catalog."""
    facts = instance.extra.get("placement") or {}
    caps = {int(d): int(v) for d, v in (facts.get("max_vms_by_distance") or {}).items()}
    distance = facts.get("default_max_distance") if max_distance is None else max_distance
    if distance is None:
        return PlacementPlan(None, int(facts.get("max_vms_best_effort", 0)))
    return PlacementPlan(int(distance), caps.get(int(distance), 0))


def placement_problems(instance: InstanceType, nodes: int, max_distance: int | None = None) -> list[Problem]:
    """A max distance the family does not support, or more nodes than the policy holds."""
    facts = instance.extra.get("placement") or {}
    caps = {int(d): int(v) for d, v in (facts.get("max_vms_by_distance") or {}).items()}
    if max_distance is not None and max_distance not in caps:
        allowed = ", ".join(str(d) for d in sorted(caps)) or "none (best-effort compact placement only)"
        return [Problem("placement_max_distance", max_distance, f"{instance.name} does not support that compact "
                        f"placement distance; supported: {allowed}")]
    plan = placement_plan(instance, max_distance)
    if nodes > plan.max_vms:
        distance = f"max distance {plan.max_distance}" if plan.max_distance else "best-effort distance"
        return [Problem("nodes", nodes, f"a compact placement policy for {instance.name} at {distance} holds at most "
                        f"{plan.max_vms} VMs; use at most {plan.max_vms} nodes, or set `placement_group: false` "
                        "(nodes then spread over the zone)")]
    return []


def build_placement_policy(name: str, selection: Selection, plan: PlacementPlan, describe: Describer,
                           opts: pulumi.ResourceOptions) -> gcp.compute.ResourcePolicy | None:
    if not selection.placement_group:
        return None
    if uses_workload_policy(selection.instance):
        return gcp.compute.ResourcePolicy(
            f"{name}-pg", region=selection.spec.region, description=describe("pg"),
            workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                type=HIGH_THROUGHPUT, max_topology_distance=TOPOLOGY_DISTANCES.get(plan.max_distance or 0)),
            opts=opts)
    return gcp.compute.ResourcePolicy(
        f"{name}-pg", region=selection.spec.region, description=describe("pg"),
        group_placement_policy=gcp.compute.ResourcePolicyGroupPlacementPolicyArgs(
            collocation=COLLOCATED, max_distance=plan.max_distance),
        opts=opts)


def policy_path(project: pulumi.Input[str], region: str, policy: gcp.compute.ResourcePolicy) -> pulumi.Output[str]:
    """The policy's partial URL, as the instance template's `resource_policies` takes it."""
    return pulumi.Output.concat("projects/", project, "/regions/", region, "/resourcePolicies/", policy.name)
