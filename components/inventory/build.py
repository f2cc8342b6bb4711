"""The inventory documents, one per cloud plugin: plain data in, plain data out (R1), written by `files.py`.

Every value the plugins template is a Jinja expression over the host's API record; fixed values are JSON string
literals (`literal`), which Jinja reads as strings. A stack with `node_groups` also gets a group per node group and
host variables of the host's own group (`node_groups.py`); a stack without them gets exactly the documents it got
before node groups existed. Option names are those of the plugins in the `ansible` 12 bundle:
amazon.aws 10 (`aws_ec2`, connection `aws_ssm`), google.cloud 1.10 (`gcp_compute`, connection `iap`) and
azure.azcollection 3.12 (`azure_rm`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gpufleet.cloud_init.power.config import NODE_NAME_KEY as ELASTIC_NODE_TAG

from ..aws.tagging import CLUSTER_TAG
from ..gcp.labels import COMPONENT as GCP_COMPONENT
from ..gcp.labels import normalise_value
from ..groups.naming import GROUP_TAG
from ..spec.errors import Problem, SpecError
from .errors import ROOT
from .facts import GCP_PROJECT_KEY, ClusterFacts
from .node_groups import ansible_group, looked_up

GROUP_ROLES = {"gpu_nodes": "node", "slurm_controller": "slurm-controller", "monitoring_server": "monitoring"}
"""Inventory group -> the `gpufleet-role` tag or label its hosts carry (Azure scale sets are matched by name)."""
PLUGIN_SUFFIX = {"aws": "aws_ec2", "gcp": "gcp_compute", "azure": "azure_rm"}
AZURE_ADMIN_USER = "azureuser"


@dataclass(frozen=True)
class AzureAccess:
    """How Ansible reaches Azure nodes, which have no public IP: a jump host (`user@host`, OpenSSH `ProxyJump`) or
    an Azure Bastion (name and resource group) through the collection's `bastion-proxy` script."""

    jump_host: str | None = None
    bastion: str | None = None
    bastion_resource_group: str | None = None
    proxy_script: str | None = None
    """Where the installed collection's `files/bastion-proxy` lies."""


def literal(value: str) -> str:
    """A fixed string as a Jinja expression."""
    return json.dumps(value)


def inventory_document(facts: ClusterFacts, azure: AzureAccess | None = None) -> dict[str, Any]:
    """The plugin configuration for the stack's cloud."""
    if facts.cloud == "aws":
        return aws_inventory(facts)
    if facts.cloud == "gcp":
        return gcp_inventory(facts)
    return azure_inventory(facts, azure or AzureAccess())


def _host_vars(instance_type: str, node_group: str, fabric: str, cloud: str, is_node: str,
               fleet: str | None = None) -> dict[str, str]:
    """Expressions over the host's record; `fabric` is one too (a literal, or the host's group's from a mapping).
    `fleet` (node groups only): the host's Auto Scaling group, instance group or scale set, which a stack without
    node groups gives as `gpufleet_node_group`."""
    return {
        "gpufleet_cloud": literal(cloud),
        "gpufleet_instance_type": instance_type,
        "gpufleet_fabric": f"{fabric} if {is_node} else {literal('none')}",
        "gpufleet_node_group": f"{node_group} if {is_node} else {literal('')}",
        **({"gpufleet_fleet": f"{fleet} if {is_node} else {literal('')}"} if fleet else {}),
    }


def _fabric_by_group(facts: ClusterFacts, group_of_host: str) -> str:
    """The fabric of the host's own group, looked up by the group the host's record names."""
    return looked_up({group.name: group.fabric for group in facts.groups}, group_of_host, "none")


def _deployed_groups(facts: ClusterFacts) -> dict[str, Any]:
    """The `node_groups` output (each group's fleet), or {} when the outputs do not have it."""
    deployed = facts.outputs.get("node_groups")
    return deployed if isinstance(deployed, dict) else {}


def aws_inventory(facts: ClusterFacts) -> dict[str, Any]:
    """`amazon.aws.aws_ec2`: running instances carrying the cluster's `gpufleet-cluster` hash, named by instance id,
    reached through Session Manager (no SSH port, no key); file transfers go through the cluster's SSM bucket."""
    bucket = facts.output("ssm_transfer_bucket", "the SSM connection's file transfers")
    fleet = facts.outputs.get("fleet_name")
    role = "tags.get('gpufleet-role')"
    groups = {group: f"{role} == {literal(value)}" for group, value in GROUP_ROLES.items()}
    if facts.groups:  # every group's Auto Scaling group (the top-level `fleet_name` is the default group's only)
        deployed_groups = {name: value for name, value in _deployed_groups(facts).items() if isinstance(value, dict)}
        fleets = sorted(str(value["fleet_name"]) for value in deployed_groups.values() if value.get("fleet_name"))
        # An elastic group has no Auto Scaling group: its nodes are the instances its power programs named.
        elastic = sorted(name for name, value in deployed_groups.items()
                         if "fleet_name" in value and value["fleet_name"] is None)
        if fleets:
            in_fleet = f"tags.get('aws:autoscaling:groupName') in {json.dumps(fleets)}"
            if elastic:
                in_fleet = (f"({in_fleet} or (tags.get({literal(GROUP_TAG)}) in {json.dumps(elastic)} and "
                            f"{literal(ELASTIC_NODE_TAG)} in tags))")
            groups["gpu_nodes"] += f" and {in_fleet}"
    elif fleet:  # the Auto Scaling group's own tag, which AWS sets on every instance it launches
        groups["gpu_nodes"] += f" and tags.get('aws:autoscaling:groupName') == {literal(fleet)}"
    group_of_host = f"tags.get({literal(GROUP_TAG)}, '')"
    groups.update({ansible_group(group.name): f"{groups['gpu_nodes']} and {group_of_host} == {literal(group.name)}"
                   for group in facts.groups})
    fleet_of_host = "tags.get('aws:autoscaling:groupName', '')"
    host_vars = (_host_vars("instance_type", group_of_host, _fabric_by_group(facts, group_of_host), "aws",
                            groups["gpu_nodes"], fleet_of_host) if facts.groups else
                 _host_vars("instance_type", fleet_of_host, literal(facts.fabric), "aws", groups["gpu_nodes"]))
    return {
        "plugin": "amazon.aws.aws_ec2",
        "regions": [facts.region],
        "filters": {f"tag:{CLUSTER_TAG}": facts.cluster_id, "tag:gpufleet-stack": facts.stack,
                    "instance-state-name": "running"},
        "hostnames": ["instance-id"],
        "strict": True,
        "groups": groups,
        "compose": {
            "ansible_connection": literal("amazon.aws.aws_ssm"),
            "ansible_aws_ssm_instance_id": "instance_id",
            "ansible_aws_ssm_region": literal(facts.region),
            "ansible_aws_ssm_bucket_name": literal(bucket),
            **host_vars,
        },
    }


def gcp_project(facts: ClusterFacts) -> str:
    project = facts.config.get(GCP_PROJECT_KEY) or facts.outputs.get("project")
    if not isinstance(project, str) or not project:
        raise SpecError([Problem(GCP_PROJECT_KEY, "(missing)", "the GCP project is needed to list its instances; "
                                 f"set it in the stack (`pulumi config set gcp:project <id> -s {facts.stack}`)")],
                        root=ROOT)
    return project


def gcp_inventory(facts: ClusterFacts) -> dict[str, Any]:
    """`google.cloud.gcp_compute`: running instances labelled with the stack and component, named by instance
    name, reached through IAP TCP forwarding (`gcloud compute ssh --tunnel-through-iap`: OS Login, no public IP).
    GPU nodes also carry the cluster's instance-name prefix, which holds the cluster hash."""
    from ..gcp.nodes import base_instance_name

    prefix = f"{base_instance_name(facts.stack, facts.component, facts.cluster_id)}-"
    role = "labels.get('gpufleet-role')"
    groups = {group: f"{role} == {literal(value)}" for group, value in GROUP_ROLES.items()}
    groups["gpu_nodes"] += f" and name.startswith({literal(prefix)})"  # every group's: `<prefix><group>-xxxx`
    # By label only: one group's name prefix can begin another's (`a-` begins `a-b-`).
    group_of_host = f"labels.get({literal(GROUP_TAG)}, '')"
    groups.update({ansible_group(group.name): f"{groups['gpu_nodes']} and {group_of_host} == {literal(group.name)}"
                   for group in facts.groups})
    # A managed group records itself in its instances' `created-by` metadata.
    fleet_of_host = "metadata.get('created-by', '').split('/') | last"
    host_vars = (_host_vars("machineType", group_of_host, _fabric_by_group(facts, group_of_host), "gcp",
                            groups["gpu_nodes"], f"({fleet_of_host})") if facts.groups else
                 _host_vars("machineType", fleet_of_host, literal(facts.fabric), "gcp", groups["gpu_nodes"]))
    return {
        "plugin": "google.cloud.gcp_compute",
        "projects": [gcp_project(facts)],
        "zones": [facts.zone],
        "auth_kind": "application",
        "filters": [f"labels.gpufleet-stack = {normalise_value(facts.stack)}",
                    f"labels.gpufleet-component = {normalise_value(GCP_COMPONENT)}",
                    "status = RUNNING"],
        "hostnames": ["name"],
        "strict": True,
        "groups": groups,
        "compose": {
            "ansible_connection": literal("google.cloud.iap"),
            "ansible_gcloud_host": "name",
            "ansible_gcloud_zone": "zone",
            "ansible_gcloud_project": "project",
            **host_vars,
        },
    }


def azure_resource_group(facts: ClusterFacts) -> str:
    group = facts.outputs.get("resource_group") or facts.existing_resource_group
    if not group:
        return str(facts.output("resource_group", "listing the scale set's VMs"))
    return str(group)


def azure_proxy(facts: ClusterFacts, access: AzureAccess) -> str:
    """`ansible_ssh_common_args`: through the jump host, or through Bastion by the VM's resource id."""
    if access.jump_host:
        return literal(f"-o ProxyJump={access.jump_host}")
    if access.bastion and access.bastion_resource_group and access.proxy_script:
        command = f"{access.proxy_script} {access.bastion} {access.bastion_resource_group}"
        before, after = literal(f'-o ProxyCommand="{command} '), literal(' %p"')
        return f"{before} ~ id ~ {after}"
    raise SpecError([Problem("--jump-host / --bastion", "(neither)", "Azure nodes have no public IP: name the jump "
                             "host (`--jump-host azureuser@10.0.200.4`) or the Azure Bastion (`--bastion NAME "
                             "--bastion-resource-group RG`, Standard SKU with native client support) Ansible reaches "
                             "them through")], root=ROOT)


def azure_inventory(facts: ClusterFacts, access: AzureAccess) -> dict[str, Any]:
    """`azure.azcollection.azure_rm`: the VMs of the cluster's scale sets (Uniform: `include_vmss_resource_groups`)
    and the stack's other VMs in the resource group, kept by host filters; reached over SSH by private IP."""
    group = azure_resource_group(facts)
    scale_sets = sorted(facts.output("scale_sets", "matching the scale sets' VMs"))
    in_scale_sets = f"(vmss.name | default('')) in {json.dumps(scale_sets)}"
    stack_vm = f"tags.get('gpufleet-stack') == {literal(facts.stack)}"
    groups = {"gpu_nodes": in_scale_sets}
    groups.update({name: f"{stack_vm} and tags.get('gpufleet-role') == {literal(role)}"
                   for name, role in GROUP_ROLES.items() if name != "gpu_nodes"})
    fleet_of_host = "vmss.name | default('')"
    if facts.groups:
        group_of_set = azure_group_scale_sets(facts)
        groups.update({ansible_group(group): f"({fleet_of_host}) in {json.dumps(sorted(scale_sets))}"
                       for group, scale_sets in group_of_set.items()})
        by_set = {scale_set: group for group, scale_sets in group_of_set.items() for scale_set in scale_sets}
        fabric_of = {group.name: group.fabric for group in facts.groups}
        host_vars = _host_vars("virtual_machine_size", looked_up(by_set, f"({fleet_of_host})", ""),
                               looked_up({s: fabric_of[g] for s, g in by_set.items()}, f"({fleet_of_host})", "none"),
                               "azure", in_scale_sets, f"({fleet_of_host})")
    else:
        host_vars = _host_vars("virtual_machine_size", fleet_of_host, literal(facts.fabric), "azure", in_scale_sets)
    return {
        "plugin": "azure.azcollection.azure_rm",
        "auth_source": "auto",
        "include_vm_resource_groups": [group],
        "include_vmss_resource_groups": [group],
        "include_host_filters": [groups[name] for name in GROUP_ROLES],
        "plain_host_names": True,
        "conditional_groups": groups,
        "hostvar_expressions": {
            "ansible_host": "private_ipv4_addresses | first",
            "ansible_user": literal(AZURE_ADMIN_USER),
            "ansible_ssh_common_args": azure_proxy(facts, access),
            **host_vars,
        },
    }


def azure_group_scale_sets(facts: ClusterFacts) -> dict[str, list[str]]:
    """Each node group's scale sets, from the `node_groups` output: on Azure the scale set is what tells a VM's
    group (see node_groups.py)."""
    facts.output("node_groups", "putting each node group's VMs in its group")
    deployed = _deployed_groups(facts)
    found = {}
    for group in facts.groups:
        own = deployed.get(group.name)
        scale_sets = own.get("scale_sets") if isinstance(own, dict) else None
        if not scale_sets or not isinstance(scale_sets, list):
            value = "(missing)" if not scale_sets else type(scale_sets).__name__
            raise SpecError([Problem(f"outputs.node_groups.{group.name}.scale_sets", value,
                                     f"node group {group.name!r} of the stack's spec has no scale sets in the outputs: "
                                     "deploy it (`pulumi up`), then pass the stack's outputs again "
                                     f"(`pulumi stack output --json -s {facts.stack}`)")], root=ROOT)
        found[group.name] = [str(name) for name in scale_sets]
    return found
