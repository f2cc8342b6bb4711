"""An elastic group's plan as slurm.conf declares it (`gpufleet.scheduler.power.ElasticGroup`): the bridge the cloud
components use once they declare elastic groups.

- Node names: `<cluster>-<group>-1` to `-<max>` (GCP names each instance after its node, and instance names are
  unique in a project's zone, so the cluster's name is part of them; Slurm node names are per cluster anyway).
- The CLOUD nodes' shape (CPUs, RealMemory, GPUs) is the smallest of the chosen type and its fallbacks: Slurm places
  jobs by the declared shape before an instance exists, and a node that registers with less than it was declared
  with is refused, so whichever type a resume gets must hold what the declaration promised.
- Features: the group's name (its NodeSet), the chosen and fallback types (`--constraint`), the fabric.
- SuspendTime and ResumeTimeout from `scheduler.slurm` (`gpufleet.spec.elastic_rules.resume_timeout_minutes`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from ..catalog.loader import Catalog, load_catalog
from ..groups.plans import ClusterPlan, NodeGroupPlans
from ..spec.elastic_rules import resume_timeout_minutes
from .conf import Partition, SlurmSettings, controller_settings
from .power import ElasticGroup, real_memory_mib


def node_prefix(cluster_name: str, group: str | None) -> str:
    """`gpufleet-burst-`: lower case, letters, digits and `-`, starting with a letter (power config's rule)."""
    words = [re.sub(r"[^a-z0-9-]+", "-", part.lower()).strip("-") for part in (cluster_name, group or "nodes")]
    prefix = "-".join(word for word in words if word) or "nodes"
    return (prefix if prefix[0].isalpha() else f"n-{prefix}") + "-"


def elastic_group(plan: ClusterPlan, catalog: Catalog | None = None, prefix: str | None = None) -> ElasticGroup | None:
    """The group's slurm.conf declaration; None for a fixed group. `prefix`: the cloud's own node prefix (GCP's
    instance names, unique per project and zone), else `node_prefix`."""
    spec = plan.spec
    if spec.nodes_range is None or spec.scheduler.kind != "slurm":
        return None
    catalog = catalog or load_catalog()
    types = [plan.instance, *(catalog.instance(spec.cloud, name) for name in plan.fallbacks)]
    shapes = [instance for instance in types if instance is not None]
    group = plan.group or spec.scheduler.slurm.partition
    return ElasticGroup(
        name=group, partition=spec.scheduler.slurm.partition, node_prefix=prefix or node_prefix(plan.cluster_name, plan.group),
        max_nodes=spec.nodes_range.max, min_nodes=spec.nodes_range.min,
        gpus=min(instance.gpus for instance in shapes), cpus=min(instance.vcpus for instance in shapes),
        memory_mib=min(real_memory_mib(instance.memory_gib) for instance in shapes),
        features=tuple(dict.fromkeys((*(instance.name for instance in shapes), plan.fabric or "tcp"))),
        suspend_time_s=spec.scheduler.slurm.suspend_time_minutes * 60,
        resume_timeout_s=resume_timeout_minutes(spec) * 60, default=plan.slurm_default)


def elastic_settings(plans: NodeGroupPlans, cluster_name: str, controller_address: str = "",
                     prefix_of: Callable[[ClusterPlan], str] | None = None) -> SlurmSettings:
    """The controller's settings with the elastic groups as CLOUD nodes (and out of the dynamic nodes' partitions);
    exactly `controller_settings` for a cluster without elastic groups. `prefix_of`: each elastic group's node
    prefix, as its cloud component names the instances."""
    settings = controller_settings(plans, cluster_name, controller_address)
    elastic = {plan.group: group for plan in plans.groups
               if (group := elastic_group(plan, prefix=prefix_of(plan) if prefix_of else None)) is not None}
    if not elastic:
        return settings
    fixed: tuple[Partition, ...] = tuple(part for part in settings.partitions if part.group not in elastic)
    return replace(settings, partitions=fixed, elastic=tuple(elastic.values()))
