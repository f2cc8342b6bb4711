"""Firewall rules: SSH only through IAP (and `access.ssh_cidrs`), all traffic inside each VPC the cluster owns,
the exporters only from the cluster subnet and `access.monitoring_cidrs`, the health endpoint only from Google's
health-check probes, and nothing on the RoCE VPC.

GCP denies ingress by default and allows egress (through Cloud NAT here). Every rule targets the nodes' service
account, so it applies to the cluster's nodes and nothing else in the project. IAP TCP forwarding reaches port 22
from 35.235.240.0/20 (`gcloud compute ssh --tunnel-through-iap`); users also need `iap.tunnelInstances.accessViaIAP`.
Firewall rules do not apply to RDMA NIC traffic and Google refuses them on a VPC with a RoCE network profile
(reference section 5 row 13), so `firewall_plan` refuses any rule that targets one: nothing is declared then.
"""

from __future__ import annotations

from ipaddress import IPv4Network

import pulumi
import pulumi_gcp as gcp

from gpufleet.cloud_init.endpoints import HEALTH_ENDPOINT_PORT

from ..outputs import exporter_ports
from ..spec import ClusterSpec
from ..spec.errors import Problem, SpecError
from .fabric import VpcPlan
from .firewall_rule import FirewallRule
from .labels import Describer
from .repair import HEALTH_CHECK_SOURCES
from .serving import serving_firewalls

IAP_RANGE = "35.235.240.0/20"
SSH_PORT = 22
ALL_TRAFFIC = (("tcp", ("0-65535",)), ("udp", ("0-65535",)), ("icmp", ()))


def firewall_plan(spec: ClusterSpec, layout: list[VpcPlan], cidrs: dict[str, IPv4Network]) -> list[FirewallRule]:
    """Every rule the cluster declares; raises `SpecError` if one would land on a RoCE VPC."""
    primary = layout[0]
    subnet = str(cidrs[primary.subnet_roles[0]])
    rules = [
        FirewallRule("fw-ssh", primary.role, (("tcp", (str(SSH_PORT),)),),
                     (IAP_RANGE, *(str(c) for c in spec.access.ssh_cidrs)), "SSH through IAP and access.ssh_cidrs"),
        FirewallRule("fw-internal", primary.role, ALL_TRAFFIC, (subnet,), "all traffic inside the cluster subnet"),
    ]
    ports = exporter_ports(spec)
    if ports:
        rules.append(FirewallRule("fw-exporters", primary.role, (("tcp", tuple(str(p) for p in ports)),),
                                  (subnet, *(str(c) for c in spec.access.monitoring_cidrs)),
                                  "exporter scrape from the cluster subnet and access.monitoring_cidrs"))
    rules.append(FirewallRule("fw-health", primary.role, (("tcp", (str(HEALTH_ENDPOINT_PORT),)),),
                              HEALTH_CHECK_SOURCES, "autohealing health checks from Google's probe ranges"))
    rules += serving_firewalls(spec, primary.role, subnet)  # inference rules (README "Inference")
    for vpc in layout[1:]:
        if vpc.firewall_allowed:
            rules.append(FirewallRule(f"fw-internal-{vpc.role}", vpc.role, ALL_TRAFFIC,
                                      tuple(str(cidrs[s]) for s in vpc.subnet_roles),
                                      f"all traffic inside {vpc.role}"))
    refuse_rules_on_rdma(rules, layout)
    return rules


def refuse_rules_on_rdma(rules: list[FirewallRule], layout: list[VpcPlan]) -> None:
    """A firewall rule on a RoCE VPC is refused before anything is declared."""
    rdma = {vpc.role for vpc in layout if not vpc.firewall_allowed}
    problems = [Problem(f"firewall.{rule.role}", rule.vpc_role, "firewall rules cannot be set on the RoCE (RDMA) "
                        "VPC: they do not apply to RDMA traffic and GCP refuses them on a network with a RoCE network "
                        "profile; put the rule on the primary VPC `net`")
                for rule in rules if rule.vpc_role in rdma]
    if problems:
        raise SpecError(problems)


def build_firewalls(name: str, rules: list[FirewallRule], vpcs: dict[str, gcp.compute.Network],
                    node_account_email: pulumi.Input[str], describe: Describer,
                    opts: pulumi.ResourceOptions) -> list[gcp.compute.Firewall]:
    return [
        gcp.compute.Firewall(
            f"{name}-{rule.role}", network=vpcs[rule.vpc_role].id, direction="INGRESS", priority=1000,
            allows=[gcp.compute.FirewallAllowArgs(protocol=protocol, ports=list(ports) or None)
                    for protocol, ports in rule.allows],
            source_ranges=list(rule.sources), target_service_accounts=[node_account_email],
            description=f"{rule.description}; {describe(rule.role)}", opts=opts)
        for rule in rules
    ]
