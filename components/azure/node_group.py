"""One node group on Azure: its scale sets (one, or an on-demand base and a spot set for a mixed market). A spec
without `node_groups` is one group, whose scale sets keep their names (`{name}-nodes`, `{name}-spot-nodes`); a
named group's are `{name}-{group}-nodes` and `{name}-{group}-spot-nodes`, its host names start with the group, and
its scale sets carry the `gpufleet-node-group` tag. An elastic group is one scale set per target at capacity 0
(`elastic.py`).

Each scale set with InfiniBand is one InfiniBand partition (`fabric.py`), so every group on the fabric has its own
partition, which its Slurm partition matches. A named group without the fabric stays out of the cluster's proximity
placement group (`gpufleet.groups.placement`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure_native

from gpufleet import cloud_init

from ..deploytime.containers import registry_digest
from ..groups.naming import GROUP_TAG
from ..naming import cluster_hash
from ..pipeline import ClusterPlan, fallback_type_plans
from ..storage.boot import user_data_with_source
from .elastic import ElasticTarget, elastic_targets, is_elastic
from .fabric import infiniband_partition
from .network import NodeNetwork
from .nodes import build_scale_sets
from .security import Security
from .tagging import Tagger


@dataclass(frozen=True)
class ClusterShared:
    """What every group of the cluster shares."""

    network: NodeNetwork
    security: Security
    proximity_group_id: pulumi.Input[str] | None
    shared_source: pulumi.Input[str] | None = None
    backend_pool_id: pulumi.Input[str] | None = None
    ssh_public_key: pulumi.Input[str] | None = None


@dataclass(frozen=True)
class AzureNodeGroup:
    plan: ClusterPlan
    scale_sets: list[azure_native.compute.VirtualMachineScaleSet]
    targets: list[ElasticTarget] | None = None
    """An elastic group's targets, one per scale set, in order; None for a fixed group."""


def group_tagger(tag: Tagger, group: str | None) -> Tagger:
    """A named group's tags: the cluster's plus the group tag; the one unnamed group's as they were."""
    if group is None:
        return tag

    def tag_in_group(role: str) -> dict[str, str]:
        tags = {**tag(role), GROUP_TAG: group}
        return {key: tags[key] for key in sorted(tags)}
    return tag_in_group


def build_node_group(name: str, plan: ClusterPlan, shared: ClusterShared, tag: Tagger,
                     opts: pulumi.ResourceOptions) -> AzureNodeGroup:
    group_name = f"{name}-{plan.group}" if plan.group else name
    in_placement = plan.placement_group or plan.group is None
    targets = elastic_targets(plan, pulumi.get_stack(), group_name, cluster_hash(name)) if is_elastic(plan) else None
    # An elastic group's fallback type boots the node config planned for that type (its GPU count, its checks).
    type_plans = {type_plan.instance.name: type_plan for type_plan in
                  (plan, *(fallback_type_plans(plan, pin=registry_digest) if targets else ()))}
    scale_sets = build_scale_sets(
        group_name, plan, infiniband_partition(plan.spec, plan.instance) is not None, shared.network,
        shared.security, shared.proximity_group_id if in_placement else None, node_custom_data(plan, shared),
        group_tagger(tag, plan.group), opts, shared.backend_pool_id, shared.ssh_public_key, targets,
        {size: node_custom_data(type_plan, shared) for size, type_plan in type_plans.items()})
    return AzureNodeGroup(plan, scale_sets, targets)


def node_custom_data(plan: ClusterPlan, shared: ClusterShared) -> pulumi.Input[str]:
    """The plan's customData, with the shared filesystem's source when the cluster has one."""
    if shared.shared_source is None:
        return plan.user_data
    return user_data_with_source(plan.cloud_config, shared.shared_source,
                                 lambda text: cloud_init.encode_user_data(text, "azure"))
