"""What a user needs after `pulumi up` on AWS: how to connect, list node IPs and write an MPI hostfile."""

from __future__ import annotations

import pulumi

from ..outputs import hostfile_command


def node_ip_query(region: str, group_name: pulumi.Input[str]) -> pulumi.Output[str]:
    """Private IPs of the running nodes, one per line."""
    return pulumi.Output.concat(
        "aws ec2 describe-instances --region ", region,
        " --filters Name=tag:aws:autoscaling:groupName,Values=", group_name,
        " Name=instance-state-name,Values=running",
        " --query 'Reservations[].Instances[].PrivateIpAddress' --output text | tr '\\t' '\\n'")


def access_outputs(region: str, group_name: pulumi.Input[str], gpus_per_node: int) -> dict[str, pulumi.Output[str]]:
    list_nodes = node_ip_query(region, group_name)
    return {
        "list_nodes": list_nodes,
        "hostfile": hostfile_command(list_nodes, gpus_per_node),
        "connect": pulumi.Output.concat(
            "aws ssm start-session --region ", region, " --target $(aws autoscaling describe-auto-scaling-groups",
            " --region ", region, " --auto-scaling-group-names ", group_name,
            " --query 'AutoScalingGroups[0].Instances[0].InstanceId' --output text)"),
    }


def elastic_access_outputs(region: str, cluster_id: str, group: str, gpus_per_node: int) -> dict[str, pulumi.Output[str]]:
    """An elastic group's nodes are the instances Slurm's power programs started: tagged with the cluster's hash and
    the group (`gpufleet.cloud_init.power.aws`), no Auto Scaling group."""
    filters = f" --filters Name=tag:gpufleet-cluster,Values={cluster_id} Name=tag:gpufleet-slurm-group,Values={group}"
    list_nodes = pulumi.Output.concat(
        "aws ec2 describe-instances --region ", region, filters, " Name=instance-state-name,Values=running",
        " --query 'Reservations[].Instances[].PrivateIpAddress' --output text | tr '\\t' '\\n'")
    return {
        "list_nodes": list_nodes,
        "hostfile": hostfile_command(list_nodes, gpus_per_node),
        "connect": pulumi.Output.concat(
            "aws ssm start-session --region ", region, " --target $(aws ec2 describe-instances --region ", region,
            filters, " Name=instance-state-name,Values=running",
            " --query 'Reservations[0].Instances[0].InstanceId' --output text)  # none while the group is at zero"),
    }
