"""What a user needs after `pulumi up` on GCP: how to connect (SSH through IAP), list node IPs and write an MPI
hostfile. Nodes have no external IPs; `gcloud compute ssh --tunnel-through-iap` reaches them through IAP TCP
forwarding (port 22 from 35.235.240.0/20 only) with OS Login keys.
"""

from __future__ import annotations

import pulumi

from ..outputs import hostfile_command


def node_ip_query(zone: str, group_name: pulumi.Input[str]) -> pulumi.Output[str]:
    """Private IPs (nic0) of the group's nodes, one per line."""
    return pulumi.Output.concat(
        "gcloud compute instance-groups managed list-instances ", group_name, " --zone ", zone,
        " --format='value(instance)' | xargs -r -n1 gcloud compute instances describe",
        " --format='value(networkInterfaces[0].networkIP)'")


def access_outputs(zone: str, group_name: pulumi.Input[str], gpus_per_node: int) -> dict[str, pulumi.Output[str]]:
    list_nodes = node_ip_query(zone, group_name)
    return {
        "list_nodes": list_nodes,
        "hostfile": hostfile_command(list_nodes, gpus_per_node),
        "connect": pulumi.Output.concat(
            "gcloud compute ssh --zone ", zone, " --tunnel-through-iap $(gcloud compute instance-groups managed ",
            "list-instances ", group_name, " --zone ", zone, " --limit 1 --format='value(instance.basename())')"),
    }


def elastic_access_outputs(zones: list[str], node_prefix: str, gpus_per_node: int) -> dict[str, pulumi.Output[str]]:
    """An elastic group's nodes are the instances named `<node_prefix><n>` that Slurm's power programs started, in
    the group's zone or one of its fallback zones."""
    listed = pulumi.Output.concat("gcloud compute instances list --zones ", ",".join(zones),
                                  " --filter='name ~ ^", node_prefix, "[0-9]+$'")
    list_nodes = pulumi.Output.concat(listed, " --format='value(networkInterfaces[0].networkIP)'")
    return {
        "list_nodes": list_nodes,
        "hostfile": hostfile_command(list_nodes, gpus_per_node),
        "connect": pulumi.Output.concat(
            "gcloud compute ssh --tunnel-through-iap $(", listed,
            " --limit 1 --format='value(name,zone.basename())' | awk '{print $1, \"--zone\", $2}')"),
    }
