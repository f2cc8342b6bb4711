"""The placement and fabric the groups of one cluster share.

A cluster has one placement (an AWS cluster placement group, a GCP placement policy) and one RDMA fabric, both for
the groups whose nodes talk over that fabric: every such group is in the cluster's zone (a cluster field) and
placement, and a job of one partition never leaves it. A group whose type has no RDMA fabric (an L4 evaluation
group beside H100 training nodes) runs outside the placement, where capacity is easier to find and no fabric needs
it; the plan says so. A group on a different RDMA fabric is refused: the cluster's networks and placement are laid
out for one.
"""

from __future__ import annotations

from dataclasses import replace

from ..spec.errors import Problem
from ..spec.model import ClusterSpec
from .plans import ClusterPlan, NodeGroupPlans


def shared_placement(spec: ClusterSpec, plans: tuple[ClusterPlan, ...]) -> NodeGroupPlans:
    """The groups' plans with the ones without an RDMA fabric taken out of the cluster's placement, and each
    group's own warnings saying which group they are about (those every group has alike stay as they are)."""
    common = set.intersection(*(set(plan.warnings) for plan in plans))
    placed = []
    for plan in plans:
        warnings = [w if w in common else f"node group {plan.group!r}: {w}" for w in plan.warnings]
        if plan.fabric is None and plan.placement_group:
            warnings.append(f"node group {plan.group!r} ({plan.instance.name}) has no RDMA fabric: it runs outside "
                            "the cluster's placement, which holds the groups on its fabric")
            plan = replace(plan, placement_group=False)
        placed.append(replace(plan, warnings=tuple(warnings)))
    return NodeGroupPlans(spec, tuple(placed))


def fabric_problems(plans: NodeGroupPlans) -> list[Problem]:
    """Every group on an RDMA fabric runs the same one: the first such group's, by name."""
    fabric_groups = [plan for plan in plans.groups if plan.fabric is not None]
    if not fabric_groups:
        return []
    first = fabric_groups[0]
    return [Problem(f"node_groups.{plan.group}.accelerator", plan.instance.name, f"runs the {plan.fabric} fabric, while "
                    f"node group {first.group!r} ({first.instance.name}) runs {first.fabric}: a cluster's networks and "
                    f"placement are laid out for one fabric; choose a type with {first.fabric}, or one without an RDMA "
                    "fabric (it then runs outside the placement), or put it in a cluster of its own")
            for plan in fabric_groups[1:] if plan.fabric != first.fabric]
