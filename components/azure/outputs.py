"""What a user needs after `pulumi up` on Azure: how to connect, list node IPs and write an MPI hostfile.

Nodes have no public IP. `connect` reaches the first node through an Azure Bastion host (Standard SKU or higher, with
native client support) that the user already has in, or peered with, the VNet. Bastion connects to port 22 from its
AzureBastionSubnet, so that subnet's range must be listed in `access.ssh_cidrs` (the NSG denies SSH from anywhere else).
From a machine inside the VNet or over VPN whose range is in `access.ssh_cidrs`, plain `ssh azureuser@<ip>` with an IP
from `list_nodes` works as well.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pulumi

from ..catalog.selector import Selection
from ..outputs import hostfile_command
from .image import floating_image_warning
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


def azure_warnings(selection: Selection, existing_subnet: Optional[str]) -> list[str]:
    """What the plan cannot check or price, in words."""
    spec, instance, price = selection.spec, selection.instance, selection.price
    warnings = []
    if spec.market.type != "on-demand" and price.spot is None:
        warnings.append(f"the catalog has no spot price for {instance.name} in {spec.region}: the estimated cost is "
                        "unknown; Azure bills the current spot price, capped by maxPrice")
    if spec.market.type != "spot" and price.on_demand is None:
        warnings.append(f"the catalog has no pay-as-you-go price for {instance.name} in {spec.region}: the estimated "
                        "cost is unknown")
    warnings += floating_image_warning(spec)
    if existing_subnet:
        warnings.append("existing subnet: its VNet range (must not overlap 172.16.0.0/16, which InfiniBand reserves) "
                        "and its egress are not checked or created by gpufleet")
    return warnings
