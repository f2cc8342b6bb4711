"""The nodes' security group: all traffic between members, egress out, and nothing else unless asked for.

EFA needs a self-referencing rule in BOTH directions: OS-bypass traffic matches only security-group rules, so
without the self egress rule NCCL fails with "Unresponsive receiver" even when 0.0.0.0/0 egress exists
(gardener-extension-provider-aws#1832, aws-ofi-nccl#663). SSH opens only to `access.ssh_cidrs`; the
exporters (9400 dcgm, 9100 node) only to `access.monitoring_cidrs` besides the cluster itself.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ..outputs import exporter_ports
from ..spec import ClusterSpec
from .tagging import Tagger

ALL_PROTOCOLS = "-1"
SSH_PORT = 22


def build_security_group(name: str, spec: ClusterSpec, vpc_id: pulumi.Input[str], tag: Tagger,
                         opts: pulumi.ResourceOptions) -> aws.ec2.SecurityGroup:
    group = aws.ec2.SecurityGroup(f"{name}-sg", vpc_id=vpc_id, tags=tag("sg"), opts=opts,
                                  description="gpufleet GPU nodes: all traffic between members (EFA), egress out")
    aws.vpc.SecurityGroupIngressRule(f"{name}-sg-self-in", security_group_id=group.id, ip_protocol=ALL_PROTOCOLS,
                                     referenced_security_group_id=group.id, description="all traffic from the cluster (EFA)",
                                     tags=tag("sg-self-in"), opts=opts)
    aws.vpc.SecurityGroupEgressRule(f"{name}-sg-self-out", security_group_id=group.id, ip_protocol=ALL_PROTOCOLS,
                                    referenced_security_group_id=group.id, description="all traffic to the cluster (EFA)",
                                    tags=tag("sg-self-out"), opts=opts)
    aws.vpc.SecurityGroupEgressRule(f"{name}-sg-egress", security_group_id=group.id, ip_protocol=ALL_PROTOCOLS,
                                    cidr_ipv4="0.0.0.0/0", description="egress through the NAT gateway",
                                    tags=tag("sg-egress"), opts=opts)
    for index, cidr in enumerate(spec.access.ssh_cidrs):
        _open_port(name, f"sg-ssh-{index}", group, SSH_PORT, str(cidr), "SSH from access.ssh_cidrs", tag, opts)
    for port in exporter_ports(spec):
        for index, cidr in enumerate(spec.access.monitoring_cidrs):
            _open_port(name, f"sg-metrics-{port}-{index}", group, port, str(cidr),
                       "exporter scrape from access.monitoring_cidrs", tag, opts)
    return group


def _open_port(name: str, role: str, group: aws.ec2.SecurityGroup, port: int, cidr: str, description: str,
               tag: Tagger, opts: pulumi.ResourceOptions) -> None:
    aws.vpc.SecurityGroupIngressRule(f"{name}-{role}", security_group_id=group.id, ip_protocol="tcp", from_port=port,
                                     to_port=port, cidr_ipv4=cidr, description=description, tags=tag(role), opts=opts)
