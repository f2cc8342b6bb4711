"""`gpufleet:index:AzureGpuCluster`: a GPU cluster on one Uniform scale set, with InfiniBand on ND sizes.

The component validates the spec against the catalog and Azure's rules before it registers itself, so bad input
declares nothing. Children are named f"{name}-{role}" (roles: rg, asg, nsg, vnet, nat-ip, nat, subnet, ppg, nodes,
spot-nodes) and parented to the component; every resource sets `location` to the spec's region. Children use the
caller's provider (`opts.provider` / `opts.providers`) or the default one, which reads the stack's
`azure-native:*` config. Values that come from other resources are checked again once known (`gpufleet.request`).
"""

# No `from __future__ import annotations` here: Pulumi's Analyzer reads the class annotations as real types.
from functools import partial
from typing import Optional

import pulumi
import pulumi_azure_native as azure_native

from gpufleet import cloud_init
from ..args import GpuClusterArgs
from ..boot import user_data_for
from ..component import GpuClusterOutputs
from ..catalog.selector import Selection, select
from ..monitoring.scrape import azure_jobs, scrape_config_text
from ..outputs import common_outputs, exporter_jobs
from ..request import ClusterInputs, cluster_request, plan_or_refuse
from ..spec import ClusterSpec, Problem, SpecError
from .fabric import infiniband_partition
from .network import build_network, build_resource_group
from .nodes import build_scale_sets
from .outputs import access_outputs, azure_warnings
from .placement import build_proximity_group
from .rules import selection_problems, spec_problems
from .security import build_security
from .tagging import tagger

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

    def __init__(self, name: str, args: GpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        request = cluster_request(args, CLOUD)  # raises ClusterRefused before anything is declared
        pipeline = partial(validate, name)  # the one checking pipeline: selection, rules, user data
        selection, custom_data = plan_or_refuse(pipeline, request.spec)
        inputs = request.inputs(pipeline)  # Outputs go through the same pipeline once known
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.selection = selection
        self.publish(self._build(name, selection, custom_data, inputs))

    def _build(self, name: str, selection: Selection, custom_data: str, inputs: ClusterInputs) -> dict:
        """Declares the children. New resource files (storage, monitoring, inference) hook in here."""
        spec = selection.spec
        tag = tagger(pulumi.get_stack(), inputs.tags)
        child = pulumi.ResourceOptions(parent=self)
        resource_group = build_resource_group(name, spec, tag, child, inputs.existing_subnet_id)
        self.security = build_security(name, spec, resource_group, tag, child)
        self.network = build_network(name, spec, resource_group, self.security.nsg_id, tag, child,
                                     inputs.existing_subnet_id)
        self.proximity_group = build_proximity_group(name, spec, resource_group, tag, child)
        partition = infiniband_partition(spec, selection.instance)
        self.node_scale_sets = build_scale_sets(
            name, selection, partition is not None, self.network, self.security,
            self.proximity_group.id if self.proximity_group else None, custom_data, tag, child, inputs.ssh_public_key)
        names = [scale_set.name for scale_set in self.node_scale_sets]
        common = common_outputs(selection)
        return {
            **common,
            "warnings": [*common["warnings"], *azure_warnings(selection, spec.network.existing_subnet_id)],
            "resource_group": resource_group,
            "subnet_id": self.network.subnet_id,
            "nat_public_ip": self.network.nat_ip,
            "network_security_group_id": self.security.nsg_id,
            "proximity_placement_group": self.proximity_group.name if self.proximity_group else None,
            "single_placement_group": partition is not None,
            "infiniband_gbps_per_node": partition.gbps_per_node if partition else 0,
            "scale_sets": names,
            **access_outputs(resource_group, names, selection.instance.gpus),
            "prometheus_scrape_config": _scrape_config(spec, resource_group, names, self),
        }


def validate(name: str, spec: ClusterSpec) -> tuple[Selection, str]:
    """The selection and the base64 customData; every problem of the spec at once, as one SpecError."""
    problems = spec_problems(spec)
    try:
        selection = select(spec)
    except SpecError as err:
        raise SpecError([*problems, *err.problems]) from None
    problems += selection_problems(selection)
    if problems:
        raise SpecError(problems)
    user_data = user_data_for(selection, name)  # raises SpecError itself when over Azure's limit
    try:
        custom_data = cloud_init.encode_user_data(user_data, "azure")
    except ValueError as err:
        raise SpecError([Problem("node", "(node software options)", str(err))]) from None
    return selection, custom_data


def _scrape_config(spec: ClusterSpec, resource_group: pulumi.Input[str], scale_sets: list[pulumi.Output[str]],
                   parent: pulumi.ComponentResource) -> pulumi.Output[str]:
    """Azure discovery needs the subscription, which only the provider's client config knows."""
    client = azure_native.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    return pulumi.Output.all(client.subscription_id, resource_group, *scale_sets).apply(
        lambda values: scrape_config_text(azure_jobs(values[0], values[1], list(values[2:]), exporter_jobs(spec))))
