"""`gpufleet:index:GcpGpuCluster`: a multi-node GPU cluster on GCP with the GPU network its machine family needs.

The component validates the spec (catalog selection, GCP rules, firewall plan, user-data size) before it
registers itself, so bad input declares nothing. Children are parented to the component and named
f"{name}-{role}", roles from a fixed list: net, subnet, net-1, subnet-1, gpu-net-{i}, gpu-subnet-{i}, rdma-net,
rdma-subnet-{i}, router, nat, fw-ssh, fw-internal, fw-exporters, fw-internal-<vpc role>, sa, sa-logging,
sa-monitoring, health-role, sa-health, sa-role-*, sa-bucket-*, lustre-range, lustre-peering, fw-lustre, lustre,
filestore, pg, template, nodes.
The project comes from the provider configuration (`gcp:project`) through the `getClientConfig` invoke.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pulumi
import pulumi_gcp as gcp

from gpufleet import cloud_init

from .. import pipeline
from ..catalog.selector import Selection
from ..monitoring.scrape import gcp_jobs, scrape_config_text
from ..outputs import common_outputs, exporter_jobs
from ..serving import serving_outputs
from ..spec import ClusterSpec
from ..storage_boot import user_data_with_source
from .fabric import VpcPlan, nic_layout, subnet_cidrs, vpc_layout
from .identity import build_identity
from .image import BootImage, boot_image, pinned_source
from .labels import describer, labeler, normalise_value
from .monitoring_server import build_monitoring_server, plan_monitoring
from .network import build_networks, with_primary_range
from .nodes import base_instance_name, build_group, build_template
from .outputs import access_outputs
from .permissions import grant_node_roles
from .placement import build_placement_policy, placement_plan, policy_path, uses_workload_policy
from .repair import build_health_check
from .security import FirewallRule, build_firewalls, firewall_plan
from .serving import build_serving
from .storage import build_shared_storage

TYPE_TOKEN = "gpufleet:index:GcpGpuCluster"


@dataclass(frozen=True)
class ClusterPlan:
    """Everything decided before any resource is declared."""

    selection: Selection
    layout: list[VpcPlan]
    firewalls: list[FirewallRule]
    image: BootImage
    user_data: str
    warnings: list[str]
    user_data_text: str = ""  # before encoding: storage.shared puts the filesystem's address into it


def plan_cluster(name: str, spec: ClusterSpec) -> ClusterPlan:
    """Validates `spec` for GCP and decides the layout; raises `SpecError` with every problem found."""
    selection = pipeline.plan_cluster(spec, name=name)  # every check, including GCP's rules.py
    layout = vpc_layout(selection.instance, selection.fabric)
    firewalls = firewall_plan(spec, layout, subnet_cidrs(spec.network.cidr, layout))
    return ClusterPlan(selection, layout, firewalls, boot_image(spec), selection.user_data, list(selection.warnings),
                       selection.cloud_config)


class GcpGpuCluster(pulumi.ComponentResource):
    """GPU nodes in one zone behind Cloud NAT, compactly placed, with gVNIC / TCPX / TCPXO / RoCE NICs as needed."""

    outputs: dict[str, pulumi.Input]

    def __init__(self, name: str, spec: ClusterSpec, opts: pulumi.ResourceOptions | None = None):
        plan = plan_cluster(name, spec)  # raises SpecError before anything is declared
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.selection = plan.selection
        self.outputs = _build(name, plan, self)
        self.service_account = self.outputs["service_account"]
        self.register_outputs(self.outputs)


def _build(name: str, plan: ClusterPlan, parent: pulumi.ComponentResource) -> dict:
    selection, spec, stack = plan.selection, plan.selection.spec, pulumi.get_stack()
    monitoring = plan_monitoring(selection)  # refuses unset secrets before anything is declared
    child = pulumi.ResourceOptions(parent=parent)
    project = gcp.organizations.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=parent)).project
    label, describe = labeler(stack, spec.tags), describer(stack)
    base_name = base_instance_name(stack, name)
    networks = build_networks(name, spec, plan.layout, project, describe, child)
    identity = build_identity(name, stack, project, spec.zone, base_name, describe, child)
    primary_range = networks.subnets["subnet"].ip_cidr_range if spec.network.existing_network else None
    firewalls = build_firewalls(name, with_primary_range(plan.firewalls, str(networks.cidrs["subnet"]), primary_range),
                                networks.vpcs, identity.email, describe, child)
    extra_roles = grant_node_roles(name, spec, project, identity.email, child)
    shared = build_shared_storage(name, stack, spec, networks.vpcs["net"].id, networks.vpcs["net"].name,
                                  identity.email, describe, child)
    user_data = (user_data_with_source(plan.user_data_text, shared.source,
                                       lambda text: cloud_init.encode_user_data(text, "gcp"))
                 if shared else plan.user_data)
    placement = placement_plan(selection.instance, selection.spec.placement_max_distance)
    policy = build_placement_policy(name, selection, placement, describe, child)
    workload_policy = policy if policy and uses_workload_policy(selection.instance) else None
    image = replace(plan.image, source=pinned_source(plan.image, spec, pulumi.InvokeOutputOptions(parent=parent)))
    template = build_template(
        name, selection, networks, nic_layout(plan.layout), image, identity.email, user_data,
        policy_path(project, spec.region, policy) if policy and not workload_policy else None, label, describe,
        pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[identity.account])))
    health_check = build_health_check(name, describe, child)
    group = build_group(name, selection, template, base_name, describe, child, health_check, workload_policy)
    serving = build_serving(name, spec, networks.vpcs["net"].id, networks.subnets["subnet"].id, group, identity.email,
                            describe, child) if spec.inference else None
    common = common_outputs(selection)
    return {
        **common,
        "warnings": plan.warnings,
        "network_id": networks.vpcs["net"].id,
        "subnet_id": networks.subnets["subnet"].id,
        "gpu_networks": [vpc.id for role, vpc in networks.vpcs.items() if role != "net"],
        "nics_per_node": len(nic_layout(plan.layout)),
        "firewall_rules": [rule.name for rule in firewalls],
        "placement_policy": policy.name if policy else None,
        "instance_template_id": template.id,
        "service_account": identity.email,
        "service_account_roles": extra_roles,
        "shared_filesystem_id": shared.id if shared else None,
        "shared_filesystem_source": shared.source if shared else None,
        "fleet_name": group.name,
        **access_outputs(spec.zone, group.name, selection.instance.gpus),
        "prometheus_scrape_config": pulumi.Output.from_input(project).apply(lambda project_id: scrape_config_text(
            gcp_jobs(project_id, spec.zone, normalise_value(stack), exporter_jobs(spec)))),
        **(serving_outputs(selection, serving.ip_address) if serving else {}),
        **build_monitoring_server(name, selection, monitoring, project, networks.vpcs["net"].id,
                                  networks.subnets["subnet"].id, label, describe, child),
    }
