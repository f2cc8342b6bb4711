"""The VPCs from the fabric layout: a primary VPC and subnet with Cloud Router + Cloud NAT for egress (nodes get
no external IPs), plus the extra gVNIC, GPU (TCPX/TCPXO) and RoCE VPCs the machine family needs.

Every VPC is custom-mode (no auto subnets) with the MTU the layout asks for. Only the primary subnet is NATed and
has Private Google Access (package mirrors through NAT, Google APIs without it); the GPU VPCs carry only node-to-node
traffic. The RoCE VPC gets the zone's RDMA network profile `projects/<project>/global/networkProfiles/<zone>-vpc-roce`
(cluster-toolkit a3ultra/a4high blueprints), set once at creation.

With `network.existing_network` and `existing_subnetwork` the primary NIC joins them: no primary VPC, subnet,
Cloud Router or NAT is created (egress is the owner's), and the cluster's firewall rules on the primary VPC use the
existing subnetwork's range. The GPU VPCs of the family are still created.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from ipaddress import IPv4Network

import pulumi
import pulumi_gcp as gcp

from ..spec import ClusterSpec
from .fabric import VpcPlan, subnet_cidrs
from .labels import Describer

ROUTING_MODE = "REGIONAL"
NAT_LOG_FILTER = "ERRORS_ONLY"


@dataclass(frozen=True)
class ClusterNetworks:
    """What the firewall rules and the instance template need."""

    vpcs: dict[str, gcp.compute.Network]  # by VpcPlan.role
    subnets: dict[str, gcp.compute.Subnetwork]  # by subnet role
    cidrs: dict[str, IPv4Network]  # by subnet role
    router: gcp.compute.Router | None  # None with network.existing_network: its egress is the owner's
    nat: gcp.compute.RouterNat | None


def roce_network_profile(project: pulumi.Input[str], zone: str) -> pulumi.Output[str]:
    """The RDMA network profile of `zone` in `project` (partial URL, as the Networks API accepts)."""
    return pulumi.Output.concat("projects/", project, "/global/networkProfiles/", zone, "-vpc-roce")


@dataclass(frozen=True)
class ExistingRef:
    """An existing VPC or subnetwork, looked up: what the template, firewalls and outputs read from it."""

    id: pulumi.Output[str]
    name: pulumi.Output[str]
    ip_cidr_range: pulumi.Output[str] | None = None


def _name_and_project(reference: str) -> tuple[str, str | None]:
    """A name or a (partial) self link: projects/<p>/global/networks/<n> or projects/<p>/regions/<r>/subnetworks/<n>."""
    parts = reference.rstrip("/").split("/")
    project = parts[parts.index("projects") + 1] if "projects" in parts else None
    return parts[-1], project


def existing_primary(spec: ClusterSpec, opts: pulumi.ResourceOptions) -> tuple[ExistingRef, ExistingRef]:
    """The primary NIC's existing VPC and subnetwork (network.existing_network / existing_subnetwork)."""
    invoke = pulumi.InvokeOutputOptions(parent=opts.parent, provider=opts.provider)
    network_name, network_project = _name_and_project(spec.network.existing_network)
    subnet_name, subnet_project = _name_and_project(spec.network.existing_subnetwork)
    network = gcp.compute.get_network_output(name=network_name, project=network_project, opts=invoke)
    subnet = gcp.compute.get_subnetwork_output(name=subnet_name, region=spec.region, project=subnet_project,
                                               opts=invoke)
    return (ExistingRef(id=network.id, name=network.name),
            ExistingRef(id=subnet.id, name=subnet.name, ip_cidr_range=subnet.ip_cidr_range))


def build_networks(name: str, spec: ClusterSpec, layout: list[VpcPlan], project: pulumi.Input[str],
                   describe: Describer, opts: pulumi.ResourceOptions) -> ClusterNetworks:
    cidrs = subnet_cidrs(spec.network.cidr, layout)
    vpcs: dict[str, gcp.compute.Network] = {}
    subnets: dict[str, gcp.compute.Subnetwork] = {}
    existing = spec.network.existing_network is not None
    if existing:
        vpcs[layout[0].role], subnets[layout[0].subnet_roles[0]] = existing_primary(spec, opts)
    for plan in layout[1:] if existing else layout:
        vpc = gcp.compute.Network(
            f"{name}-{plan.role}", auto_create_subnetworks=False, mtu=plan.mtu, routing_mode=ROUTING_MODE,
            network_profile=roce_network_profile(project, spec.zone) if plan.network_profile else None,
            description=describe(plan.role), opts=opts)
        vpcs[plan.role] = vpc
        for subnet_role in plan.subnet_roles:
            subnets[subnet_role] = gcp.compute.Subnetwork(
                f"{name}-{subnet_role}", network=vpc.id, region=spec.region, ip_cidr_range=str(cidrs[subnet_role]),
                stack_type="IPV4_ONLY", private_ip_google_access=plan.kind == "host" and plan.role == "net",
                description=describe(subnet_role), opts=opts)
    if existing:
        return ClusterNetworks(vpcs=vpcs, subnets=subnets, cidrs=cidrs, router=None, nat=None)
    primary_vpc, primary_subnet = vpcs[layout[0].role], subnets[layout[0].subnet_roles[0]]
    router = gcp.compute.Router(f"{name}-router", network=primary_vpc.id, region=spec.region,
                                description=describe("router"), opts=opts)
    nat = gcp.compute.RouterNat(
        f"{name}-nat", router=router.name, region=spec.region, nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
        subnetworks=[gcp.compute.RouterNatSubnetworkArgs(name=primary_subnet.id,
                                                         source_ip_ranges_to_nats=["ALL_IP_RANGES"])],
        log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter=NAT_LOG_FILTER), opts=opts)
    return ClusterNetworks(vpcs=vpcs, subnets=subnets, cidrs=cidrs, router=router, nat=nat)


def with_primary_range(rules: list, planned_cidr: str, actual_range: pulumi.Input[str] | None) -> list:
    """Firewall rules with the planned primary subnet range replaced by the existing subnetwork's."""
    if actual_range is None:
        return rules
    return [replace(rule, sources=tuple(actual_range if source == planned_cidr else source for source in rule.sources))
            for rule in rules]
