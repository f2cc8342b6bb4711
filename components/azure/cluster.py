"""`gpufleet:index:AzureGpuCluster`: a GPU cluster on one Uniform scale set, with InfiniBand on ND sizes.

The component validates the spec against the catalog and Azure's rules before it registers itself, so bad input
declares nothing. Children are named f"{name}-{role}" (roles: rg, asg, nsg, vnet, nat-ip, nat, subnet, ppg, nodes,
spot-nodes) and parented to the component; every resource sets `location` to the spec's region.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native

from ..catalog.selector import Selection
from ..monitoring.scrape import azure_jobs, scrape_config_text
from ..outputs import common_outputs, exporter_jobs
from ..pipeline import plan_cluster
from ..spec import ClusterSpec
from .fabric import infiniband_partition
from .network import build_network, build_resource_group
from .nodes import build_scale_sets
from .outputs import access_outputs
from .placement import build_proximity_group
from .security import build_security
from .tagging import tagger

TYPE_TOKEN = "gpufleet:index:AzureGpuCluster"


class AzureGpuCluster(pulumi.ComponentResource):
    """GPU nodes in one scale set (one InfiniBand partition) behind a NAT gateway, with no public IPs."""

    outputs: dict[str, pulumi.Input]

    def __init__(self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None):
        selection, custom_data = validate(name, spec)  # raises SpecError before anything is declared
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.selection = selection
        self.outputs = _build(name, selection, custom_data, self)
        self.register_outputs(self.outputs)


def validate(name: str, spec: ClusterSpec) -> tuple[Selection, str]:
    """The checked plan and the base64 customData; every problem of the spec at once, as one SpecError."""
    plan = plan_cluster(spec, name=name)
    return plan, plan.user_data


def _build(name: str, selection: Selection, custom_data: str, parent: pulumi.ComponentResource) -> dict:
    spec = selection.spec
    tag = tagger(pulumi.get_stack(), spec.tags)
    child = pulumi.ResourceOptions(parent=parent)
    resource_group = build_resource_group(name, spec, tag, child)
    security = build_security(name, spec, resource_group, tag, child)
    node_network = build_network(name, spec, resource_group, security.nsg_id, tag, child)
    proximity_group = build_proximity_group(name, spec, resource_group, tag, child)
    partition = infiniband_partition(spec, selection.instance)
    scale_sets = build_scale_sets(name, selection, partition is not None, node_network, security,
                                  proximity_group.id if proximity_group else None, custom_data, tag, child)
    common = common_outputs(selection)
    return {
        **common,
        "resource_group": resource_group,
        "subnet_id": node_network.subnet_id,
        "nat_public_ip": node_network.nat_ip,
        "network_security_group_id": security.nsg_id,
        "proximity_placement_group": proximity_group.name if proximity_group else None,
        "single_placement_group": partition is not None,
        "infiniband_gbps_per_node": partition.gbps_per_node if partition else 0,
        "scale_sets": [scale_set.name for scale_set in scale_sets],
        **access_outputs(resource_group, [scale_set.name for scale_set in scale_sets], selection.instance.gpus),
        "prometheus_scrape_config": _scrape_config(spec, resource_group, [s.name for s in scale_sets], parent),
    }


def _scrape_config(spec: ClusterSpec, resource_group: pulumi.Input[str], scale_sets: list[pulumi.Output[str]],
                   parent: pulumi.ComponentResource) -> pulumi.Output[str]:
    """Azure discovery needs the subscription, which only the provider's client config knows."""
    client = azure_native.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    return pulumi.Output.all(client.subscription_id, resource_group, *scale_sets).apply(
        lambda values: scrape_config_text(azure_jobs(values[0], values[1], list(values[2:]), exporter_jobs(spec))))
