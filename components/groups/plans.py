"""The plan of a whole cluster: one checked plan per node group, in name order, and what the groups share."""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.selection import Selection
from ..spec.model import ClusterSpec


@dataclass(frozen=True)
class ClusterPlan(Selection):
    """Everything decided before any resource is declared: the selection's fields (spec, instance, gpu, fabric,
    placement_group, price, warnings), plus the node's user data, rendered and size-checked once."""

    cluster_name: str
    cloud_config: str
    """The node's cloud-config text ("#cloud-config ..."), deterministic for a spec and catalog."""
    user_data: str
    """`cloud_config` encoded for the cloud's API field (AWS: gzip+base64, Azure: base64, GCP: plain); empty when
    the cloud-config is fetched by reference (`by_reference`)."""
    by_reference: bool = False
    """AWS only: the cloud-config does not fit the launch template and lies in S3 behind a boothook."""
    group: str | None = None
    """The node group's name; None for a spec without `node_groups`, whose one group is declared as before."""
    slurm_default: bool = True
    """This group's partition is Slurm's default one."""
    fallbacks: tuple[str, ...] = ()
    """Elastic groups: the `accelerator.fallback_types`, checked, in the order a resume tries them after the chosen
    type (`gpufleet.groups.fallbacks`)."""


@dataclass(frozen=True)
class NodeGroupPlans:
    """Every group's `ClusterPlan` (one, named None, for a spec without `node_groups`) and the cluster's own spec."""

    spec: ClusterSpec
    """The cluster's spec as written; each group's resolved spec is `groups[i].spec`."""
    groups: tuple[ClusterPlan, ...]

    @property
    def grouped(self) -> bool:
        """The spec names its groups (`node_groups`); False for one group declared as before."""
        return self.spec.node_groups is not None

    @property
    def first(self) -> ClusterPlan:
        """The default group (Slurm's default partition): the one marked `slurm_default`, else the first by name.
        Cluster-wide resources read the cluster's own fields (region, network, access, ...) from its spec."""
        return next(plan for plan in self.groups if plan.slurm_default)

    @property
    def nodes(self) -> int:
        return sum(plan.spec.nodes for plan in self.groups)

    @property
    def placed(self) -> tuple[ClusterPlan, ...]:
        """The groups in the cluster's placement (AWS placement group, GCP placement policy)."""
        return tuple(plan for plan in self.groups if plan.placement_group)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(warning for plan in self.groups for warning in plan.warnings))

    def group(self, name: str | None) -> ClusterPlan:
        return next(plan for plan in self.groups if plan.group == name)
