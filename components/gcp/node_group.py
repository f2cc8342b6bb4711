"""One node group on GCP: its instance template and its zonal managed instance group. A spec without
`node_groups` is one group, whose children keep their names (`{name}-template`, `{name}-nodes`); a named group's
are `{name}-{group}-template`, `{name}-{group}-nodes`, its nodes are named `<cluster base>-<group>-xxxx`, and its
resources carry the `gpufleet-node-group` label (Prometheus' `node_group`, the inventory).

Every group's NICs are a subset of the cluster's networks: the groups on the cluster's GPU fabric share its layout
(`gpufleet.groups.placement` refuses another fabric), a group without one uses the primary NIC only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pulumi
import pulumi_gcp as gcp

from gpufleet import cloud_init

from ..groups.naming import GROUP_TAG
from ..pipeline import ClusterPlan
from ..storage.boot import user_data_with_source
from .elastic import power_node_prefix, template_labels, template_metadata
from .fabric import nic_layout, vpc_layout
from .image import boot_image, pinned_source
from .labels import Describer, Labeler
from .network import ClusterNetworks
from .nodes import build_group, build_template


@dataclass(frozen=True)
class ClusterShared:
    """What every group of the cluster shares."""

    networks: ClusterNetworks
    account_email: pulumi.Input[str]
    base_name: str
    health_check: gcp.compute.HealthCheck
    template_policy: pulumi.Input[str] | None
    """The compact placement policy's path, for the templates of the groups in the placement."""
    workload_policy: gcp.compute.ResourcePolicy | None
    """The workload policy, for the instance groups in the placement."""
    depends_on: list[pulumi.Resource]
    shared_source: pulumi.Input[str] | None = None
    slurm_metadata: dict[str, pulumi.Input[str]] | None = None
    cluster_id: str = ""
    """The cluster's hash: an elastic group's template labels its instances with it (the power programs' check)."""


@dataclass(frozen=True)
class GcpNodeGroup:
    plan: ClusterPlan
    template: gcp.compute.InstanceTemplate
    group: gcp.compute.InstanceGroupManager | None
    """None for an elastic group: Slurm's power programs create its instances from the template by name."""
    node_prefix: str = ""
    """An elastic group's instance (and Slurm node) names are this prefix and 1 to `max`."""
    fallback_templates: tuple[tuple[ClusterPlan, gcp.compute.InstanceTemplate], ...] = ()
    """An elastic group's fallback types, each with its own node config in its own template, in the order a resume
    tries them after `template`."""

    def templates(self) -> list[tuple[ClusterPlan, gcp.compute.InstanceTemplate]]:
        return [(self.plan, self.template), *self.fallback_templates]


def group_labeler(label: Labeler, group: str | None) -> Labeler:
    """A named group's labels: the cluster's, plus the group label; the one unnamed group's as they were."""
    if group is None:
        return label

    def label_in_group(role: str) -> dict[str, str]:
        labels = {**label(role), GROUP_TAG: group}
        return {key: labels[key] for key in sorted(labels)}
    return label_in_group


def build_node_group(name: str, plan: ClusterPlan, shared: ClusterShared, label: Labeler, describe: Describer,
                     opts: pulumi.ResourceOptions, fallbacks: tuple[ClusterPlan, ...] = ()) -> GcpNodeGroup:
    """`fallbacks`: an elastic group's fallback types' plans (`pipeline.fallback_type_plans`), one template each,
    named `{group}-{machine type}-template`."""
    spec = plan.spec
    group_name = f"{name}-{plan.group}" if plan.group else name
    base_name = f"{shared.base_name}-{plan.group}" if plan.group else shared.base_name
    label = group_labeler(label, plan.group)
    image = boot_image(spec)
    image = replace(image, source=pinned_source(image, spec, pulumi.InvokeOutputOptions(parent=opts.parent)))
    placed = plan.placement_group
    elastic = spec.nodes_range is not None
    prefix = power_node_prefix(shared.base_name, plan.group) if elastic else ""

    def template_of(typed: ClusterPlan, template_name: str) -> gcp.compute.InstanceTemplate:
        user_data = (user_data_with_source(typed.cloud_config, shared.shared_source,
                                           lambda text: cloud_init.encode_user_data(text, "gcp"))
                     if shared.shared_source is not None else typed.user_data)
        return build_template(
            template_name, typed, shared.networks, nic_layout(vpc_layout(typed.instance, typed.fabric)), image,
            shared.account_email, user_data, shared.template_policy if placed else None,
            elastic_labeler(label, shared.cluster_id) if elastic else label, describe,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=shared.depends_on)),
            {**(shared.slurm_metadata or {}), **template_metadata(prefix)} if elastic else shared.slurm_metadata)

    template = template_of(plan, group_name)
    if elastic:
        return GcpNodeGroup(plan, template, None, prefix, tuple(
            (typed, template_of(typed, f"{group_name}-{typed.instance.name}")) for typed in fallbacks))
    group = build_group(group_name, plan, template, base_name, describe, opts, shared.health_check,
                        shared.workload_policy if placed else None)
    return GcpNodeGroup(plan, template, group)


def elastic_labeler(label: Labeler, cluster_id: str) -> Labeler:
    """An elastic group's labels: its own, plus the cluster's hash on what the template creates."""
    def label_elastic(role: str) -> dict[str, str]:
        labels = {**label(role), **template_labels(cluster_id)}
        return {key: labels[key] for key in sorted(labels)}
    return label_elastic
