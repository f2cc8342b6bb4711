"""`gpufleet:index:AzureGpuCluster`: a GPU cluster on one Uniform scale set, with InfiniBand on ND sizes.

The component validates the spec against the catalog and Azure's rules before it registers itself, so bad input
declares nothing. Children are named f"{name}-{role}" (roles: rg, asg, nsg, vnet, nat-ip, nat, subnet, ppg, nodes,
spot-nodes, nodes-<zone>-<size> (an elastic group's further targets), role-*, slurm-power-* (elastic groups),
fs-nsg, fs-subnet, amlfs, files, files-share, files-endpoint, files-dns, files-dns-link, files-dns-group, and the
serving and monitoring server children) and parented to the component; every resource sets `location` to the
spec's region. Children use the caller's provider (`opts.provider` / `opts.providers`) or
the default one, which reads the stack's `azure-native:*` config. Values that come from other resources are
checked again once known (`gpufleet.request`).
"""

# No `from __future__ import annotations` here: Pulumi's Analyzer reads the class annotations as real types.
from functools import partial
from typing import Optional

import pulumi
import pulumi_azure_native as azure_native

from ..args import GpuClusterArgs
from ..component import GpuClusterOutputs
from ..deploytime.containers import registry_digest
from ..groups.outputs import group_outputs
from ..groups.plans import NodeGroupPlans
from ..monitoring.scrape import azure_jobs, scrape_config_text
from ..naming import cluster_hash
from ..outputs import common_outputs, exporter_jobs
from ..pipeline import plan_node_groups, undeclared_elastic_problems
from ..request import ClusterInputs, cluster_request, plan_or_refuse
from ..serving import serving_outputs
from ..spec import ClusterSpec
from ..spec.errors import raise_if
from .elastic import elastic_azure_problems, is_elastic, power_config
from .fabric import infiniband_partition
from .monitoring_server import build_monitoring_asg, build_monitoring_server, plan_monitoring
from .network import build_network, build_resource_group, node_subnet_cidr
from .node_group import AzureNodeGroup, ClusterShared, build_node_group
from .outputs import access_outputs
from .permissions import grant_roles
from .placement import build_proximity_group
from .power_roles import grant_power_permissions
from .security import build_security
from .serving import build_autoscale, build_load_balancer, frontend_address
from .slurm_controller import SlurmController, build_slurm_asg
from .storage import build_shared_storage
from .tagging import Tagger, tagger

TYPE_TOKEN = "gpufleet:index:AzureGpuCluster"
CLOUD = "azure"


class AzureGpuCluster(GpuClusterOutputs):
    """GPU nodes in one scale set (one InfiniBand partition) behind a NAT gateway, with no public IPs."""

    resource_group: pulumi.Output[str]
    """The resource group holding the cluster (the existing subnet's, or the one gpufleet created)."""
    subnet_id: pulumi.Output[str]
    """The nodes' subnet."""
    nat_public_ip: pulumi.Output[Optional[str]]
    """The NAT gateway's public IP (egress only), when gpufleet created the network."""
    network_security_group_id: pulumi.Output[str]
    """The nodes' network security group."""
    proximity_placement_group: pulumi.Output[Optional[str]]
    """The proximity placement group's name, when the nodes use one."""
    single_placement_group: pulumi.Output[bool]
    """Whether the scale set is one placement group (one InfiniBand partition)."""
    infiniband_gbps_per_node: pulumi.Output[int]
    """InfiniBand bandwidth per node, 0 without InfiniBand."""
    scale_sets: pulumi.Output[list[str]]
    """The nodes' scale sets (on demand, then spot)."""
    list_instances: pulumi.Output[str]
    """Shell command listing the first scale set's instances."""
    ssh_user: pulumi.Output[str]
    """The nodes' admin user."""
    node_identities: pulumi.Output[list[str]]
    """The scale sets' managed identities (principal ids), for role assignments made outside gpufleet."""
    node_role_assignments: pulumi.Output[list[str]]
    """The role assignments gpufleet made for the nodes (`access:`), as "role on scope"."""
    shared_filesystem_id: pulumi.Output[Optional[str]]
    """The shared filesystem's id (Azure Managed Lustre or Azure Files), when `storage.shared` is set."""
    shared_filesystem_source: pulumi.Output[Optional[str]]
    """What the nodes mount, when `storage.shared` is set."""
    monitoring_server_id: pulumi.Output[Optional[str]]
    """The monitoring server's VM id (with `monitoring.server`)."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None):
        request = cluster_request(args, CLOUD)  # raises ClusterRefused before anything is declared
        pipeline = partial(validate, name)  # the one checking pipeline: selection, rules, user data
        plans = plan_or_refuse(pipeline, request.spec)
        inputs = request.inputs(pipeline)  # Outputs go through the same pipeline once known
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.plans = plans
        self.selection = plans.first
        self.publish(self._build(name, plans, inputs))

    def _build(self, name: str, plans: NodeGroupPlans, inputs: ClusterInputs) -> dict:
        """Declares the children: network, security, storage, the Slurm controller, each node group's scale sets,
        permissions, serving, monitoring."""
        selection = plans.first  # the cluster's own fields (region, network, access, ...) are every group's
        spec = selection.spec
        tag = tagger(pulumi.get_stack(), inputs.tags)
        child = pulumi.ResourceOptions(parent=self)
        monitoring = plan_monitoring(plans)  # checked by `validate` before anything was declared
        resource_group = build_resource_group(name, spec, tag, child, inputs.existing_subnet_id)
        monitoring_asg = build_monitoring_asg(name, spec.region, resource_group, monitoring, tag, child)
        slurm_asg = build_slurm_asg(name, spec.region, resource_group, spec.scheduler.kind == "slurm", tag, child)
        self.security = build_security(name, spec, resource_group, tag, child, monitoring_asg, slurm_asg)
        self.network = build_network(name, spec, resource_group, self.security.nsg_id, tag, child,
                                     inputs.existing_subnet_id)
        self.proximity_group = build_proximity_group(name, spec, resource_group, tag, child)
        partition = infiniband_partition(spec, selection.instance)
        self.shared_storage = build_shared_storage(
            name, pulumi.get_stack(), spec, resource_group, self.network.vnet_name, self.network.vnet_id,
            str(node_subnet_cidr(spec.network.cidr)), self.network.nat_id, tag, child)
        shared = self.shared_storage
        subscription = azure_native.authorization.get_client_config_output(
            opts=pulumi.InvokeOutputOptions(parent=self)).subscription_id
        self.load_balancer, pool_id = build_load_balancer(
            name, spec, resource_group, self.network.subnet_id, subscription, tag, child) if spec.inference \
            else (None, None)
        self.slurm = SlurmController(name, plans, resource_group, self.network.subnet_id, self.security.nsg_id,
                                     slurm_asg, tag, child, metrics=monitoring.enabled) if slurm_asg is not None else None
        elastic = [group for group in plans.groups if is_elastic(group)]
        if self.slurm is not None and not elastic:
            self.slurm.start()  # declared where it always was: a fixed cluster's plan is unchanged
        node_tag = tag if self.slurm is None else _with_tags(tag, self.slurm.node_tags)
        shared_nodes = ClusterShared(self.network, self.security,
                                     self.proximity_group.id if self.proximity_group else None,
                                     shared.source if shared else None, pool_id, inputs.ssh_public_key)
        self.group_fleets: dict[Optional[str], AzureNodeGroup] = {
            group.group: build_node_group(name, group, shared_nodes, node_tag, child) for group in plans.groups}
        if self.slurm is not None and elastic:
            self._start_elastic(name, resource_group, subscription, monitoring.enabled, child)
        self.node_scale_sets = [scale_set for group in self.group_fleets.values() for scale_set in group.scale_sets]
        scale_set_groups = [group.plan.group for group in self.group_fleets.values() for _ in group.scale_sets]
        if self.load_balancer is not None:
            build_autoscale(name, spec, resource_group, self.node_scale_sets[0], subscription, tag, child)
        identities = [s.identity.apply(lambda i: i.principal_id) for s in self.node_scale_sets]
        if self.slurm is not None:
            self.slurm.grant_nodes(name, identities)
        roles = grant_roles(name, spec, identities, self, child)
        names = [scale_set.name for scale_set in self.node_scale_sets]
        first = [scale_set.name for scale_set in self.group_fleets[selection.group].scale_sets]
        common = common_outputs(plans)
        balancer = self.load_balancer
        return {
            **common,
            **group_outputs(plans, {group: {"scale_sets": [scale_set.name for scale_set in node_group.scale_sets],
                                            **access_outputs(resource_group, [s.name for s in node_group.scale_sets],
                                                             node_group.plan.instance.gpus)}
                                    for group, node_group in self.group_fleets.items()}),
            "resource_group": resource_group,
            "subnet_id": self.network.subnet_id,
            "nat_public_ip": self.network.nat_ip,
            "network_security_group_id": self.security.nsg_id,
            "proximity_placement_group": self.proximity_group.name if self.proximity_group else None,
            "single_placement_group": partition is not None,
            "infiniband_gbps_per_node": partition.gbps_per_node if partition else 0,
            "scale_sets": names,
            "node_identities": identities,
            "node_role_assignments": roles,
            "shared_filesystem_id": shared.id if shared else None,
            "shared_filesystem_source": shared.source if shared else None,
            **access_outputs(resource_group, first, selection.instance.gpus),
            "prometheus_scrape_config": _scrape_config(spec, resource_group, names, scale_set_groups, self),
            **(serving_outputs(selection, frontend_address(spec) or balancer.frontend_ip_configurations.apply(
                lambda frontends: frontends[0].private_ip_address if frontends else None)) if balancer else {}),
            **build_monitoring_server(name, plans, monitoring, resource_group, self.network.subnet_id,
                                      self.security.nsg_id, monitoring_asg, names, tag, child,
                                      self.slurm.address if self.slurm else None, scale_set_groups),
            **(self.slurm.outputs if self.slurm else {}),
        }


    def _start_elastic(self, name: str, resource_group: pulumi.Input[str], subscription: pulumi.Input[str],
                       metrics: bool, child: pulumi.ResourceOptions) -> None:
        """The controller of a cluster with elastic groups: its power config names each group's scale sets by id
        (strings of the subscription, resource group and their chosen names, so nothing waits in a cycle), and its
        identity may act on those scale sets only (`elastic.py`, `power_roles.py`)."""
        assert self.slurm is not None
        fleets = [fleet for fleet in self.group_fleets.values() if fleet.targets is not None]
        unique = cluster_hash(name)
        power = pulumi.Output.all(subscription, resource_group).apply(lambda values: power_config(
            unique, [(fleet.plan, fleet.targets or []) for fleet in fleets], values[0], values[1], metrics))
        self.slurm.start(power)
        grant_power_permissions(name, pulumi.get_stack(), self.slurm.principal, subscription, resource_group,
                                [(f"{fleet.plan.group}-{target.role}" if fleet.plan.group else target.role,
                                  scale_set.id) for fleet in fleets
                                 for target, scale_set in zip(fleet.targets or [], fleet.scale_sets, strict=True)],
                                [self.network.subnet_id, self.security.nsg_id, self.security.asg_id], child)


def _with_tags(tag: Tagger, extra: dict) -> Tagger:
    """The scale sets' tags plus the Slurm controller's address and key URL, which the nodes read through IMDS."""
    return lambda role: {**tag(role), **extra}


def validate(name: str, spec: ClusterSpec) -> NodeGroupPlans:
    """Each node group's checked plan (with its base64 customData); every problem of the spec at once, as one
    SpecError."""
    plans = plan_node_groups(spec, name=name, pin=registry_digest)
    raise_if(undeclared_elastic_problems(plans) + elastic_azure_problems(plans.groups))
    plan_monitoring(plans)  # refuses unset `monitoring.alerts.*_secret` config keys
    return plans


def _scrape_config(spec: ClusterSpec, resource_group: pulumi.Input[str], scale_sets: list[pulumi.Output[str]],
                   groups: list[Optional[str]], parent: pulumi.ComponentResource) -> pulumi.Output[str]:
    """Azure discovery needs the subscription, which only the provider's client config knows."""
    client = azure_native.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    return pulumi.Output.all(client.subscription_id, resource_group, *scale_sets).apply(
        lambda values: scrape_config_text(azure_jobs(values[0], values[1], list(values[2:]), exporter_jobs(spec),
                                                     groups)))
