"""`gpufleet:index:AzureGpuCluster`: a GPU cluster on one Uniform scale set, with InfiniBand on ND sizes.

The component validates the spec against the catalog and Azure's rules before it registers itself, so bad input
declares nothing. Children are named f"{name}-{role}" (roles: rg, asg, nsg, vnet, nat-ip, nat, subnet, ppg, nodes,
spot-nodes, role-*, fs-nsg, fs-subnet, amlfs, files, files-share, files-endpoint, files-dns, files-dns-link,
files-dns-group) and parented to the component; every resource sets `location` to the spec's region.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native

from gpufleet import cloud_init

from ..catalog.selector import Selection
from ..monitoring.scrape import azure_jobs, scrape_config_text
from ..outputs import common_outputs, exporter_jobs
from ..pipeline import plan_cluster
from ..serving import serving_outputs
from ..spec import ClusterSpec
from ..storage_boot import user_data_with_source
from .fabric import infiniband_partition
from .monitoring_server import build_monitoring_asg, build_monitoring_server, plan_monitoring
from .network import build_network, build_resource_group, node_subnet_cidr
from .nodes import build_scale_sets
from .outputs import access_outputs
from .permissions import grant_roles
from .placement import build_proximity_group
from .security import build_security
from .serving import build_autoscale, build_load_balancer, frontend_address
from .storage import build_shared_storage
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
        self.node_identities = self.outputs["node_identities"]
        self.register_outputs(self.outputs)


def validate(name: str, spec: ClusterSpec) -> tuple[Selection, str]:
    """The checked plan and the base64 customData; every problem of the spec at once, as one SpecError."""
    plan = plan_cluster(spec, name=name)
    return plan, plan.user_data


def _build(name: str, selection: Selection, custom_data: str, parent: pulumi.ComponentResource) -> dict:
    spec = selection.spec
    tag = tagger(pulumi.get_stack(), spec.tags)
    child = pulumi.ResourceOptions(parent=parent)
    monitoring = plan_monitoring(selection)  # refuses unset secrets before anything is declared
    resource_group = build_resource_group(name, spec, tag, child)
    monitoring_asg = build_monitoring_asg(name, spec.region, resource_group, monitoring, tag, child)
    security = build_security(name, spec, resource_group, tag, child, monitoring_asg)
    node_network = build_network(name, spec, resource_group, security.nsg_id, tag, child)
    proximity_group = build_proximity_group(name, spec, resource_group, tag, child)
    partition = infiniband_partition(spec, selection.instance)
    shared = build_shared_storage(name, pulumi.get_stack(), spec, resource_group, node_network.vnet_name,
                                  node_network.vnet_id, str(node_subnet_cidr(spec.network.cidr)),
                                  node_network.nat_id, tag, child)
    if shared:
        custom_data = user_data_with_source(selection.cloud_config, shared.source,
                                            lambda text: cloud_init.encode_user_data(text, "azure"))
    subscription = azure_native.authorization.get_client_config_output(
        opts=pulumi.InvokeOutputOptions(parent=parent)).subscription_id
    balancer, pool_id = build_load_balancer(name, spec, resource_group, node_network.subnet_id, subscription, tag,
                                            child) if spec.inference else (None, None)
    scale_sets = build_scale_sets(name, selection, partition is not None, node_network, security,
                                  proximity_group.id if proximity_group else None, custom_data, tag, child, pool_id)
    if balancer is not None:
        build_autoscale(name, spec, resource_group, scale_sets[0], subscription, tag, child)
    roles = grant_roles(name, spec, [s.identity.apply(lambda i: i.principal_id) for s in scale_sets], parent, child)
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
        "node_identities": [scale_set.identity.apply(lambda i: i.principal_id) for scale_set in scale_sets],
        "node_role_assignments": roles,
        "shared_filesystem_id": shared.id if shared else None,
        "shared_filesystem_source": shared.source if shared else None,
        **access_outputs(resource_group, [scale_set.name for scale_set in scale_sets], selection.instance.gpus),
        "prometheus_scrape_config": _scrape_config(spec, resource_group, [s.name for s in scale_sets], parent),
        **(serving_outputs(selection, frontend_address(spec) or balancer.frontend_ip_configurations.apply(
            lambda frontends: frontends[0].private_ip_address if frontends else None)) if balancer else {}),
        **build_monitoring_server(name, selection, monitoring, resource_group, node_network.subnet_id, security.nsg_id,
                                  monitoring_asg, [s.name for s in scale_sets], tag, child),
    }


def _scrape_config(spec: ClusterSpec, resource_group: pulumi.Input[str], scale_sets: list[pulumi.Output[str]],
                   parent: pulumi.ComponentResource) -> pulumi.Output[str]:
    """Azure discovery needs the subscription, which only the provider's client config knows."""
    client = azure_native.authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    return pulumi.Output.all(client.subscription_id, resource_group, *scale_sets).apply(
        lambda values: scrape_config_text(azure_jobs(values[0], values[1], list(values[2:]), exporter_jobs(spec))))
