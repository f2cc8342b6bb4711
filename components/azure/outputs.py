"""What a user needs after `pulumi up` on Azure: how to connect, list node IPs and write an MPI hostfile.

Nodes have no public IP. `connect` reaches the first node through an Azure Bastion host (Standard SKU or higher, with
native client support) that the user already has in, or peered with, the VNet. Bastion connects to port 22 from its
AzureBastionSubnet, so that subnet's range must be listed in `access.ssh_cidrs` (the NSG denies SSH from anywhere else).
From a machine inside the VNet or over VPN whose range is in `access.ssh_cidrs`, plain `ssh azureuser@<ip>` with an IP
from `list_nodes` works as well.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from ..outputs import hostfile_command
from .nodes import ADMIN_USER

BASTION_PLACEHOLDER = "<bastion-name> --resource-group <bastion-resource-group>"


def node_ip_query(resource_group: pulumi.Input[str], scale_set: pulumi.Input[str]) -> pulumi.Output[str]:
    """Private IPs of one scale set's VMs, one per line."""
    return pulumi.Output.concat(
        "az vmss nic list --resource-group ", resource_group, " --vmss-name ", scale_set,
        " --query '[].ipConfigurations[0].privateIPAddress' --output tsv")


def access_outputs(resource_group: pulumi.Input[str], scale_sets: Sequence[pulumi.Input[str]],
                   gpus_per_node: int) -> dict[str, pulumi.Output[str]]:
    queries = [node_ip_query(resource_group, scale_set) for scale_set in scale_sets]
    list_nodes = queries[0] if len(queries) == 1 else pulumi.Output.concat(
        "{ ", *[part for query in queries for part in (query, "; ")], "}")
    first = scale_sets[0]
    return {
        "list_nodes": list_nodes,
        "list_instances": pulumi.Output.concat("az vmss list-instances --resource-group ", resource_group, " --name ",
                                               first, " --output table"),
        "hostfile": hostfile_command(list_nodes, gpus_per_node),
        "connect": pulumi.Output.concat(
            f"az network bastion ssh --name {BASTION_PLACEHOLDER} --auth-type ssh-key --username {ADMIN_USER} ",
            "--ssh-key ~/.ssh/id_ed25519 --target-resource-id $(az vmss list-instances --resource-group ",
            resource_group, " --name ", first, " --query '[0].id' --output tsv)"),
        "ssh_user": pulumi.Output.from_input(ADMIN_USER),
    }
