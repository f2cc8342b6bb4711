"""`gpufleet:index:GcpGpuCluster`: a multi-node GPU cluster on GCP with the GPU network its machine family needs.

The component validates the spec (catalog selection, GCP rules, firewall plan, user-data size) before it
registers itself, so bad input declares nothing. Children are parented to the component and named
f"{name}-{role}", roles from a fixed list: net, subnet, net-1, subnet-1, gpu-net-{i}, gpu-subnet-{i}, rdma-net,
rdma-subnet-{i}, router, nat, fw-ssh, fw-internal, fw-exporters, fw-internal-<vpc role>, sa, sa-logging,
sa-monitoring, health-role, sa-health, sa-role-*, sa-bucket-*, lustre-range, lustre-peering, fw-lustre, lustre,
filestore, pg, template, nodes, and the serving and monitoring server children.
The project comes from the provider configuration (`gcp:project`) through the `getClientConfig` invoke. Children
use the caller's provider (`opts.provider` / `opts.providers`) or the default one, which reads the stack's `gcp:*`
config. The names GCP makes gpufleet choose (service account, custom role, instance prefix) carry
`naming.cluster_hash`, unique per project, stack and component.
"""

# No `from __future__ import annotations` here: Pulumi's Analyzer reads the class annotations as real types.
from dataclasses import dataclass, field
from functools import partial
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from .. import pipeline
from ..args import GpuClusterArgs
from ..component import GpuClusterOutputs
from ..deploytime.containers import registry_digest
from ..groups.outputs import group_outputs
from ..groups.plans import NodeGroupPlans
from ..monitoring.scrape import gcp_jobs, scrape_config_text
from ..monitoring.secrets import MonitoringPlan
from ..naming import cluster_hash
from ..outputs import common_outputs, exporter_jobs
from ..pipeline import ClusterPlan
from ..request import cluster_request, plan_or_refuse
from ..serving import serving_outputs
from ..spec import ClusterSpec
from ..spec.errors import raise_if
from .elastic import PowerGrant, elastic_gcp_problems, elastic_zones, grant_power_permissions, power_config, zones
from .fabric import VpcPlan, nic_layout, subnet_cidrs, vpc_layout
from .firewall_rule import FirewallRule
from .identity import build_identity
from .image import boot_image
from .labels import describer, labeler, normalise_value
from .monitoring_server import build_monitoring_server, plan_monitoring
from .network import build_networks, with_primary_range
from .node_group import ClusterShared, GcpNodeGroup, build_node_group
from .nodes import base_instance_name
from .outputs import access_outputs, elastic_access_outputs
from .permissions import grant_node_roles
from .placement import build_placement_policy, placement_plan, policy_path, uses_workload_policy
from .repair import build_health_check
from .security import build_firewalls, firewall_plan
from .serving import build_serving
from .slurm_controller import SlurmController
from .storage import build_shared_storage

TYPE_TOKEN = "gpufleet:index:GcpGpuCluster"
CLOUD = "gcp"


@dataclass(frozen=True)
class GcpPlan:
    """Everything decided before any resource is declared: each node group's checked plan, the cluster's networks
    (laid out for its GPU fabric, which every group on a fabric shares), its firewall rules and monitoring."""

    groups: NodeGroupPlans
    layout: list[VpcPlan]
    firewalls: list[FirewallRule]
    warnings: list[str]
    monitoring: Optional[MonitoringPlan] = None
    fallbacks: dict[Optional[str], tuple[ClusterPlan, ...]] = field(default_factory=dict)
    """Each elastic group's fallback types' plans, by group (`pipeline.fallback_type_plans`)."""


def plan_gcp(name: str, spec: ClusterSpec) -> GcpPlan:
    """Validates `spec` for GCP and decides the layout; raises `SpecError` with every problem found."""
    groups = pipeline.plan_node_groups(spec, name=name, pin=registry_digest)  # every check, with GCP's rules.py
    raise_if(elastic_gcp_problems(groups.groups, base_instance_name(pulumi.get_stack(), name, cluster_hash(name))))
    fabric_group = next((plan for plan in groups.groups if plan.fabric is not None), groups.first)
    layout = vpc_layout(fabric_group.instance, fabric_group.fabric)
    cluster_spec = groups.first.spec
    firewalls = firewall_plan(cluster_spec, layout, subnet_cidrs(cluster_spec.network.cidr, layout))
    boot_image(cluster_spec)  # refuses an image the spec cannot boot before anything is declared
    fallbacks = {plan.group: pipeline.fallback_type_plans(plan, pin=registry_digest)
                 for plan in groups.groups if plan.fallbacks}
    return GcpPlan(groups, layout, firewalls, list(groups.warnings), plan_monitoring(groups), fallbacks)


class GcpGpuCluster(GpuClusterOutputs):
    """GPU nodes in one zone behind Cloud NAT, compactly placed, with gVNIC / TCPX / TCPXO / RoCE NICs as needed."""

    network_id: pulumi.Output[str]
    """The nodes' primary VPC."""
    subnet_id: pulumi.Output[str]
    """The nodes' primary subnet."""
    gpu_networks: pulumi.Output[list[str]]
    """The GPU (RDMA / GPUDirect) VPCs, one per extra NIC group."""
    nics_per_node: pulumi.Output[int]
    """Network interfaces per node."""
    firewall_rules: pulumi.Output[list[str]]
    """The firewall rules' names."""
    placement_policy: pulumi.Output[Optional[str]]
    """The placement (compact or workload) policy's name, when the nodes use one."""
    instance_template_id: pulumi.Output[str]
    """The nodes' instance template."""
    service_account: pulumi.Output[str]
    """The nodes' service account email."""
    fleet_name: pulumi.Output[str]
    """The nodes' managed instance group."""
    service_account_roles: pulumi.Output[list[str]]
    """The roles gpufleet granted the node service account (`access:`), as "role on scope"."""
    shared_filesystem_id: pulumi.Output[Optional[str]]
    """The shared filesystem's id (Managed Lustre or Filestore), when `storage.shared` is set."""
    shared_filesystem_source: pulumi.Output[Optional[str]]
    """What the nodes mount, when `storage.shared` is set."""
    monitoring_server: pulumi.Output[Optional[str]]
    """The monitoring server's instance name (with `monitoring.server`)."""
    monitoring_server_account: pulumi.Output[Optional[str]]
    """The monitoring server's service account email (with `monitoring.server`)."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None):
        request = cluster_request(args, CLOUD)  # raises ClusterRefused before anything is declared
        check = partial(plan_gcp, name)  # the one checking pipeline: selection, rules, user data
        plan = plan_or_refuse(check, request.spec)
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.plans = plan.groups
        self.selection = plan.groups.first
        self.publish(self._build(name, plan))

    def _build(self, name: str, plan: GcpPlan) -> dict:
        """Declares the children: networks, identity and roles, firewalls, storage, the Slurm controller, each node
        group's template and instance group, serving, monitoring."""
        plans = plan.groups
        selection, stack = plans.first, pulumi.get_stack()  # the cluster's own fields are every group's
        spec = selection.spec
        child = pulumi.ResourceOptions(parent=self)
        project = gcp.organizations.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self)).project
        label, describe = labeler(stack, spec.tags), describer(stack)
        unique = cluster_hash(name)
        base_name = base_instance_name(stack, name, unique)
        self.networks = build_networks(name, spec, plan.layout, project, describe, child)
        networks = self.networks
        self.identity = build_identity(name, stack, project, spec.zone, base_name, describe, child, unique)
        primary_range = networks.subnets["subnet"].ip_cidr_range if spec.network.existing_network else None
        self.firewalls = build_firewalls(
            name, with_primary_range(plan.firewalls, str(networks.cidrs["subnet"]), primary_range), networks.vpcs,
            self.identity.email, describe, child)
        extra_roles = grant_node_roles(name, spec, project, self.identity.email, child)
        self.shared_storage = build_shared_storage(name, stack, spec, networks.vpcs["net"].id,
                                                   networks.vpcs["net"].name, self.identity.email, describe, child)
        shared = self.shared_storage
        placed = plans.placed[0] if plans.placed else None
        placement = placement_plan(placed.instance, spec.placement_max_distance) if placed else None
        self.placement = build_placement_policy(name, placed, placement, describe, child) if placed else None
        policy = self.placement
        workload_policy = policy if policy and uses_workload_policy(placed.instance) else None
        self.slurm = SlurmController(name, plans, project, networks.vpcs["net"].id, networks.subnets["subnet"].id,
                                     self.identity.email, label, describe, child,
                                     metrics=plan.monitoring.enabled) \
            if spec.scheduler.kind == "slurm" else None
        elastic = [group for group in plans.groups if group.spec.nodes_range is not None]
        if self.slurm and not elastic:
            self.slurm.start()  # declared where it always was: a fixed cluster's plan is unchanged
        cluster_shared = ClusterShared(
            networks=networks, account_email=self.identity.email, base_name=base_name,
            health_check=build_health_check(name, describe, child),
            template_policy=policy_path(project, spec.region, policy) if policy and not workload_policy else None,
            workload_policy=workload_policy, depends_on=[self.identity.account],
            shared_source=shared.source if shared else None,
            slurm_metadata=self.slurm.node_metadata if self.slurm else None, cluster_id=unique)
        self.group_fleets: dict[Optional[str], GcpNodeGroup] = {
            group.group: build_node_group(name, group, cluster_shared, label, describe, child,
                                          plan.fallbacks.get(group.group, ()))
            for group in plans.groups}
        if self.slurm and elastic:
            self._start_elastic(name, stack, unique, project, base_name, plan.monitoring.enabled, describe, child)
        first = self.group_fleets[selection.group]
        self.template, self.group = first.template, first.group
        self.serving = build_serving(name, spec, networks.vpcs["net"].id, networks.subnets["subnet"].id, self.group,
                                     self.identity.email, describe, child) if spec.inference else None
        common = common_outputs(plans)
        return {
            **common,
            **group_outputs(plans, {group: fleet_outputs(spec.zone, node_group)
                                    for group, node_group in self.group_fleets.items()}),
            "warnings": plan.warnings,
            "network_id": networks.vpcs["net"].id,
            "subnet_id": networks.subnets["subnet"].id,
            "gpu_networks": [vpc.id for role, vpc in networks.vpcs.items() if role != "net"],
            "nics_per_node": len(nic_layout(vpc_layout(selection.instance, selection.fabric))),
            "firewall_rules": [rule.name for rule in self.firewalls],
            "placement_policy": policy.name if policy else None,
            "instance_template_id": self.template.id,
            "service_account": self.identity.email,
            "service_account_roles": extra_roles,
            "shared_filesystem_id": shared.id if shared else None,
            "shared_filesystem_source": shared.source if shared else None,
            **{key: value for key, value in fleet_outputs(spec.zone, first).items() if key != "instance_template_id"},
            "prometheus_scrape_config": pulumi.Output.from_input(project).apply(lambda project_id: scrape_config_text(
                gcp_jobs(project_id, spec.zone, normalise_value(stack), exporter_jobs(spec),
                         grouped=plans.grouped, fallback_zones=elastic_zones(plans)))),
            **(serving_outputs(selection, self.serving.ip_address) if self.serving else {}),
            **(self.slurm.outputs if self.slurm else {}),
            **build_monitoring_server(name, plans, plan.monitoring, project, networks.vpcs["net"].id,
                                      networks.subnets["subnet"].id, label, describe, child,
                                      (self.slurm.account_email, self.slurm.address) if self.slurm else None),
        }

    def _start_elastic(self, name: str, stack: str, unique: str, project: pulumi.Input[str], base_name: str,
                       metrics: bool, describe, child: pulumi.ResourceOptions) -> None:
        """The controller of a cluster with elastic groups: its power config names each group's template, and its
        service account may create and delete those groups' instances only (`gcp/elastic.py`)."""
        assert self.slurm is not None
        fleets = [fleet for fleet in self.group_fleets.values() if fleet.group is None]
        spec = fleets[0].plan.spec
        grant_power_permissions(
            name, stack, unique, project, spec.region, self.slurm.account_email, self.identity.account,
            [PowerGrant(fleet.node_prefix, tuple(zones(fleet.plan)),
                        tuple(template.name for _, template in fleet.templates())) for fleet in fleets],
            [subnet.name for subnet in self.networks.subnets.values()],
            [self.placement.name] if self.placement else [], describe, child)
        links = [[template.self_link for _, template in fleet.templates()] for fleet in fleets]
        power = pulumi.Output.all(project, links).apply(lambda values: power_config(
            values[0], unique, [(fleet.plan, fleet.node_prefix,
                                 [(typed.instance.name, link) for (typed, _), link in zip(fleet.templates(), group_links,
                                                                                         strict=True)])
                                for fleet, group_links in zip(fleets, values[1], strict=True)], metrics))
        self.slurm.start(power, base_name)


def fleet_outputs(zone: str, fleet: GcpNodeGroup) -> dict:
    """A group's outputs: an elastic group has a template and no instance group (its nodes are listed by prefix)."""
    if fleet.group is not None:
        return {"instance_template_id": fleet.template.id, "fleet_name": fleet.group.name,
                **access_outputs(zone, fleet.group.name, fleet.plan.instance.gpus)}
    return {"instance_template_id": fleet.template.id, "fleet_name": None,
            **elastic_access_outputs(zones(fleet.plan), fleet.node_prefix, fleet.plan.instance.gpus)}
