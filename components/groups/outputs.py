"""The `node_groups` output of a cluster of several groups: each group's facts, cost and fleet, by name.

A spec without `node_groups` publishes none of it (the output is then absent), so its outputs stay as they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..boot import node_fabric
from ..catalog.selection_cost import cluster_cost, cost_table
from .plans import NodeGroupPlans


def group_outputs(plans: NodeGroupPlans, resources: Mapping[str | None, Mapping[str, Any]]) -> dict[str, Any]:
    """{"node_groups": {group: facts and `resources[group]`}} for a grouped cluster, {} for one group. `resources`:
    each cloud's own values per group (fleet name, template id, how to list its nodes), which may be Outputs."""
    if not plans.grouped:
        return {}
    groups = {}
    for plan in plans.groups:
        cost = cluster_cost(plan)
        groups[plan.group] = {
            "instance_type": plan.instance.name,
            "gpu": plan.instance.gpu,
            "gpus_per_node": plan.instance.gpus,
            "nodes": plan.spec.nodes,
            "market": plan.spec.market.type,
            "fabric": node_fabric(plan) or "tcp",
            "placement": plan.placement_group,
            "slurm_partition": plan.spec.scheduler.slurm.partition if plan.spec.scheduler.kind == "slurm" else None,
            "slurm_default": plan.slurm_default if plan.spec.scheduler.kind == "slurm" else None,
            "estimated_usd_per_hour": cost.usd_per_hour,
            "estimated_usd_per_month": cost.usd_per_month,
            "cost": cost_table(plan),
            **resources.get(plan.group, {}),
        }
    return {"node_groups": groups}
