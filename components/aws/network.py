"""A VPC with one private subnet in one AZ (EFA traffic cannot cross AZs) and a NAT gateway for egress.

The NAT gateway sits in a small public subnet with the only route to the internet gateway; nodes get no public
IPs. With `network.existing_subnet_id`, nothing is created and the subnet's VPC is looked up.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Optional

import pulumi
import pulumi_aws as aws

from ..spec import ClusterSpec
from .tagging import Tagger

AWS_AZ_ID_MARK = "-az"


@dataclass(frozen=True)
class NodeNetwork:
    """Where the nodes go."""

    vpc_id: pulumi.Input[str]
    vpc_cidr: pulumi.Input[str]
    subnet_id: pulumi.Input[str]
    vpc: Optional[aws.ec2.Vpc] = None
    subnet: Optional[aws.ec2.Subnet] = None


def subnet_cidrs(vpc_cidr: IPv4Network) -> tuple[IPv4Network, IPv4Network]:
    """(private, public): the private subnet takes the first quarter of the VPC, the NAT subnet the last /28."""
    private = next(vpc_cidr.subnets(new_prefix=min(vpc_cidr.prefixlen + 2, 26)))
    public = list(vpc_cidr.subnets(new_prefix=28))[-1]
    return private, public


def zone_args(zone: str) -> dict:
    """AZ ids (use1-az4) are the same in every account; AZ names (us-east-1a) are not."""
    return {"availability_zone_id": zone} if AWS_AZ_ID_MARK in zone else {"availability_zone": zone}


def build_network(name: str, spec: ClusterSpec, existing_subnet_id: Optional[pulumi.Input[str]], tag: Tagger,
                  opts: pulumi.ResourceOptions) -> NodeNetwork:
    """Every resource and lookup names the spec's region: the stack's provider config (profile, roles, default
    tags) stays in force, whichever region the cluster is in."""
    region = spec.region
    if existing_subnet_id is not None:
        subnet = aws.ec2.get_subnet_output(id=existing_subnet_id, region=region,
                                           opts=pulumi.InvokeOutputOptions(parent=opts.parent))
        return NodeNetwork(vpc_id=subnet.vpc_id, vpc_cidr=subnet.cidr_block, subnet_id=subnet.id)
    private_cidr, public_cidr = subnet_cidrs(spec.network.cidr)
    vpc = aws.ec2.Vpc(f"{name}-vpc", cidr_block=str(spec.network.cidr), enable_dns_hostnames=True,
                      enable_dns_support=True, tags=tag("vpc"), region=region, opts=opts)
    igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tag("igw"), region=region, opts=opts)
    public = aws.ec2.Subnet(f"{name}-nat-subnet", vpc_id=vpc.id, cidr_block=str(public_cidr), region=region,
                            map_public_ip_on_launch=False, tags=tag("nat-subnet"), opts=opts, **zone_args(spec.zone))
    private = aws.ec2.Subnet(f"{name}-subnet", vpc_id=vpc.id, cidr_block=str(private_cidr), region=region,
                             map_public_ip_on_launch=False, tags=tag("subnet"), opts=opts, **zone_args(spec.zone))
    nat_ip = aws.ec2.Eip(f"{name}-nat-ip", domain="vpc", tags=tag("nat-ip"), region=region, opts=opts)
    nat = aws.ec2.NatGateway(f"{name}-nat", allocation_id=nat_ip.id, subnet_id=public.id, tags=tag("nat"),
                             region=region,
                             opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[igw])))
    _route_all(name, "nat-routes", vpc, public, {"gateway_id": igw.id}, tag, region, opts)
    _route_all(name, "routes", vpc, private, {"nat_gateway_id": nat.id}, tag, region, opts)
    return NodeNetwork(vpc_id=vpc.id, vpc_cidr=vpc.cidr_block, subnet_id=private.id, vpc=vpc, subnet=private)


def _route_all(name: str, role: str, vpc: aws.ec2.Vpc, subnet: aws.ec2.Subnet, target: dict, tag: Tagger,
               region: str, opts: pulumi.ResourceOptions) -> None:
    """A route table sending everything outside the VPC to `target`, associated with `subnet`."""
    table = aws.ec2.RouteTable(f"{name}-{role}", vpc_id=vpc.id, tags=tag(role), region=region, opts=opts,
                               routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", **target)])
    aws.ec2.RouteTableAssociation(f"{name}-{role}-assoc", route_table_id=table.id, subnet_id=subnet.id,
                                  region=region, opts=opts)
