"""The VPCs from the fabric layout: a primary VPC and subnet with Cloud Router + Cloud NAT for egress (nodes get
no external IPs), plus the extra gVNIC, GPU (TCPX/TCPXO) and RoCE VPCs the machine family needs.

Every VPC is custom-mode (no auto subnets) with the MTU the layout asks for. Only the primary subnet is NATed and
has Private Google Access (package mirrors through NAT, Google APIs without it); the GPU VPCs carry only node-to-node
traffic. The RoCE VPC gets the zone's RDMA network profile `projects/<project>/global/networkProfiles/<zone>-vpc-roce`
(cluster-toolkit a3ultra/a4high blueprints), set once at creation.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    router: gcp.compute.Router
    nat: gcp.compute.RouterNat


def roce_network_profile(project: pulumi.Input[str], zone: str) -> pulumi.Output[str]:
    """The RDMA network profile of `zone` in `project` (partial URL, as the Networks API accepts)."""
    return pulumi.Output.concat("projects/", project, "/global/networkProfiles/", zone, "-vpc-roce")


def build_networks(name: str, spec: ClusterSpec, layout: list[VpcPlan], project: pulumi.Input[str],
                   describe: Describer, opts: pulumi.ResourceOptions) -> ClusterNetworks:
    cidrs = subnet_cidrs(spec.network.cidr, layout)
    vpcs: dict[str, gcp.compute.Network] = {}
    subnets: dict[str, gcp.compute.Subnetwork] = {}
    for plan in layout:
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
