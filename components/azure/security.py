"""The network security group on the nodes' NICs (and on the node subnet gpufleet creates).

Inbound, in priority order:
- SSH (22/tcp) only from `access.ssh_cidrs`; no rule at all when none are given;
- everything between cluster nodes, matched by the cluster's application security group (NCCL bootstrap, MPI, the
  exporters). InfiniBand traffic does not traverse the VNet, so no NSG rule can block or open it;
- the exporters (dcgm 9400/tcp, node 9100/tcp, as enabled) from the VNet and from `access.monitoring_cidrs`;
- an explicit deny of everything else, ahead of Azure's default AllowVnetInBound and AllowAzureLoadBalancerInBound.
Outbound keeps Azure's defaults (egress leaves through the NAT gateway).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure_native

from ..outputs import exporter_ports
from ..spec import ClusterSpec
from .storage import node_storage_rules
from .tagging import Tagger

network = azure_native.network

SSH_PORT = 22
VNET_TAG = "VirtualNetwork"
PRIORITY = {"ssh": 100, "ssh-monitoring": 105, "cluster": 110, "storage": 115, "exporters-vnet": 120,
            "exporters-monitoring": 130, "slurm-nodes": 140, "slurm-controller": 145, "slurm-metrics": 147, "ssh-slurm": 150, "deny": 4096}


@dataclass(frozen=True)
class Security:
    nsg_id: pulumi.Output[str]
    asg_id: pulumi.Output[str]
    nsg: azure_native.network.NetworkSecurityGroup | None = None


def exporter_port_ranges(spec: ClusterSpec) -> list[str]:
    """NSG port ranges of the enabled exporters, in ascending order (the order existing rules were declared in)."""
    return [str(port) for port in sorted(exporter_ports(spec))]


def security_rules(spec: ClusterSpec, asg_id: pulumi.Input[str],
                   monitoring_asg_id: pulumi.Input[str] | None = None,
                   slurm_asg_id: pulumi.Input[str] | None = None) -> list[dict]:
    """Inbound rules as `SecurityRuleArgs` keyword arguments; the cluster's nodes are `asg_id`, the monitoring
    server (when there is one) `monitoring_asg_id`, reachable on SSH from `access.ssh_cidrs` only."""
    nodes = [{"id": asg_id}]
    rules = []

    def allow(key: str, name: str, protocol: str, ports: list[str], **source) -> None:
        port_args = {"destination_port_range": ports[0]} if len(ports) == 1 else {"destination_port_ranges": ports}
        rules.append({"name": name, "priority": PRIORITY[key], "direction": "Inbound", "access": "Allow",
                      "protocol": protocol, "source_port_range": "*", "destination_application_security_groups": nodes,
                      **port_args, **source})

    ssh_cidrs = [str(c) for c in spec.access.ssh_cidrs]
    if ssh_cidrs:
        allow("ssh", "allow-ssh", "Tcp", [str(SSH_PORT)], source_address_prefixes=ssh_cidrs)
        if monitoring_asg_id is not None:
            rules.append({**rules[-1], "name": "allow-ssh-monitoring", "priority": PRIORITY["ssh-monitoring"],
                          "destination_application_security_groups": [{"id": monitoring_asg_id}]})
    allow("cluster", "allow-cluster", "*", ["*"], source_application_security_groups=nodes)
    rules += node_storage_rules(spec, asg_id, PRIORITY["storage"])  # Lustre from the filesystem subnet (storage.py)
    ports = exporter_port_ranges(spec)
    if ports:
        allow("exporters-vnet", "allow-exporters-vnet", "Tcp", ports, source_address_prefix=VNET_TAG)
        monitoring = [str(c) for c in spec.access.monitoring_cidrs]
        if monitoring:
            allow("exporters-monitoring", "allow-exporters-monitoring", "Tcp", ports, source_address_prefixes=monitoring)
    from .serving import serving_nsg_rules  # inference (README "Inference")
    rules += serving_nsg_rules(spec, nodes)
    if slurm_asg_id is not None:
        rules += slurm_rules(spec, nodes, [{"id": slurm_asg_id}], ssh_cidrs, monitoring_asg_id)
    rules.append({"name": "deny-all-inbound", "priority": PRIORITY["deny"], "direction": "Inbound", "access": "Deny",
                  "protocol": "*", "source_address_prefix": "*", "source_port_range": "*",
                  "destination_address_prefix": "*", "destination_port_range": "*"})
    return rules


def slurm_rules(spec: ClusterSpec, nodes: list[dict], controller: list[dict], ssh_cidrs: list[str],
                monitoring_asg_id: pulumi.Input[str] | None = None) -> list[dict]:
    """Slurm's ports only, only between the controller's ASG and the nodes': slurmd (6818) and srun's range on the
    nodes from the controller; slurmctld (6817) and srun's range on the controller from the nodes; SSH to the
    controller from `access.ssh_cidrs` (the Bastion subnet), as for the monitoring server; with a monitoring server,
    the controller's node_exporter (Slurm metrics) from the monitoring server's ASG only."""
    from ..scheduler.conf import SLURMCTLD_PORT, SLURMD_PORT, SRUN_PORT_RANGE
    srun = f"{SRUN_PORT_RANGE[0]}-{SRUN_PORT_RANGE[1]}"
    common = {"direction": "Inbound", "access": "Allow", "protocol": "Tcp", "source_port_range": "*"}
    rules = [
        {**common, "name": "allow-slurm-nodes", "priority": PRIORITY["slurm-nodes"],
         "destination_port_ranges": [str(SLURMD_PORT), srun], "source_application_security_groups": controller,
         "destination_application_security_groups": nodes},
        {**common, "name": "allow-slurm-controller", "priority": PRIORITY["slurm-controller"],
         "destination_port_ranges": [str(SLURMCTLD_PORT), srun], "source_application_security_groups": nodes,
         "destination_application_security_groups": controller},
    ]
    if ssh_cidrs:
        rules.append({**common, "name": "allow-ssh-slurm", "priority": PRIORITY["ssh-slurm"],
                      "destination_port_range": str(SSH_PORT), "source_address_prefixes": ssh_cidrs,
                      "destination_application_security_groups": controller})
    if monitoring_asg_id is not None:
        from ..monitoring.scrape import SLURM_JOB
        rules.append({**common, "name": "allow-slurm-metrics", "priority": PRIORITY["slurm-metrics"],
                      "destination_port_range": str(SLURM_JOB[1]),
                      "source_application_security_groups": [{"id": monitoring_asg_id}],
                      "destination_application_security_groups": controller})
    return rules


def build_security(name: str, spec: ClusterSpec, resource_group: pulumi.Input[str], tag: Tagger,
                   opts: pulumi.ResourceOptions, monitoring_asg_id: pulumi.Input[str] | None = None,
                   slurm_asg_id: pulumi.Input[str] | None = None) -> Security:
    asg = network.ApplicationSecurityGroup(f"{name}-asg", resource_group_name=resource_group, location=spec.region,
                                           tags=tag("asg"), opts=opts)
    rules = [network.SecurityRuleArgs(**rule) for rule in security_rules(spec, asg.id, monitoring_asg_id, slurm_asg_id)]
    nsg = network.NetworkSecurityGroup(f"{name}-nsg", resource_group_name=resource_group, location=spec.region,
                                       security_rules=rules, tags=tag("nsg"), opts=opts)
    return Security(nsg_id=nsg.id, asg_id=asg.id, nsg=nsg)
