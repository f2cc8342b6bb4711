"""The Slurm controller on Azure (`gpufleet:index:SlurmController`): one small VM in the cluster subnet, no public
IP, reached through Azure Bastion like the monitoring server.

- address: its own NIC (the cluster's NSG, the controller's application security group), so the private address
  the nodes know survives a replaced VM;
- state: a separate managed disk (encrypted at rest with platform keys) on LUN 0 for StateSaveLocation, detached,
  not deleted, when the VM goes;
- munge key: a Key Vault (RBAC) secret written once (gpufleet.scheduler.key); `Key Vault Secrets User` on that
  secret only, for the controller's identity and the scale sets' identities;
- network: the NSG admits slurmd (6818) and srun's range on the nodes from the controller's ASG, slurmctld (6817)
  and srun's range on the controller from the nodes' ASG (gpufleet.azure.security.slurm_rules).
The nodes read the controller's address and the secret's URL from their tags (IMDS), so their user data names
neither. With elastic groups the controller also carries the power programs and `power.json` (`elastic.py`), and
its slurm.conf the groups' CLOUD nodes and power saving (gpufleet.scheduler.elastic). Children are named f"{name}-slurm-{role}" (roles: asg, nic, state, vault, key, key-access, key-nodes-<i>,
controller).
"""

from __future__ import annotations

import hashlib

import pulumi
import pulumi_azure_native as azure_native

from gpufleet import cloud_init
from gpufleet.cloud_init.power.config import PowerConfig
from gpufleet.cloud_init.slurm_controller import ControllerConfig, render_controller_cloud_config

from ..groups.plans import NodeGroupPlans
from ..scheduler.conf import controller_files, controller_hostname, controller_settings
from ..scheduler.elastic import elastic_settings
from ..scheduler.key import keep_first_value, munge_key
from .image_version import pinned_reference
from .nodes import ADMIN_USER
from .private_vm import DATA_DEVICE, UBUNTU, data_disk, grant_secret, private_nic, private_vm, rbac_vault, stable_guid
from .tagging import Tagger

network, authorization = azure_native.network, azure_native.authorization
TYPE_TOKEN = "gpufleet:index:SlurmController"
DEFAULT_VM_SIZE = "Standard_D2s_v5"
CONTROLLER_TAG = "gpufleet-slurm-controller"
KEY_TAG = "gpufleet-slurm-key"
SECRET_NAME = "gpufleet-slurm-munge-key"


def slurm_vault_name(subscription: str, resource_group: str, stack: str, name: str) -> str:
    """3-24 characters, globally unique: a hash of where the cluster lives."""
    return "gfs" + hashlib.sha256(f"{subscription}/{resource_group}/{stack}/{name}/slurm".encode()).hexdigest()[:20]


def build_slurm_asg(name: str, region: str, resource_group: pulumi.Input[str], enabled: bool, tag: Tagger,
                    opts: pulumi.ResourceOptions) -> pulumi.Output[str] | None:
    """The controller's application security group (the NSG's Slurm rules need it first), or None without Slurm."""
    if not enabled:
        return None
    return network.ApplicationSecurityGroup(f"{name}-slurm-asg", resource_group_name=resource_group,
                                            location=region, tags=tag("slurm-asg"), opts=opts).id


class SlurmController(pulumi.ComponentResource):
    """slurmctld for one cluster; `node_tags` go on the scale sets, `outputs` into the cluster's."""

    def __init__(self, name: str, plans: NodeGroupPlans, resource_group: pulumi.Input[str],
                 subnet_id: pulumi.Input[str], nsg_id: pulumi.Input[str], asg_id: pulumi.Input[str], tag: Tagger,
                 opts: pulumi.ResourceOptions, metrics: bool = False):
        super().__init__(TYPE_TOKEN, f"{name}-slurm", None, opts)
        spec, stack, role = plans.first.spec, pulumi.get_stack(), f"{name}-slurm"
        child = pulumi.ResourceOptions(parent=self)
        client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        self.client = client
        nic = private_nic(f"{role}-nic", "slurm-nic", spec.region, resource_group, subnet_id, nsg_id, asg_id, tag, child)
        address = nic.ip_configurations.apply(lambda configs: configs[0].private_ip_address if configs else None)
        state = data_disk(f"{role}-state", "slurm-state", spec.scheduler.slurm.state_disk_gib, spec.region,
                          resource_group, tag, child)
        vault = rbac_vault(f"{role}-vault", "slurm-vault", pulumi.Output.all(client.subscription_id, resource_group).apply(
            lambda values: slurm_vault_name(values[0], values[1], stack, name)), client.tenant_id, spec.region,
            resource_group, tag, child)
        self.key = azure_native.keyvault.Secret(
            f"{role}-key", resource_group_name=resource_group, vault_name=vault.name, secret_name=SECRET_NAME,
            properties=azure_native.keyvault.SecretPropertiesArgs(value=munge_key()), tags=tag("slurm-key"),
            opts=keep_first_value("azure", child))
        key_url = pulumi.Output.concat("https://", vault.name, ".vault.azure.net/secrets/", SECRET_NAME)
        self._plans, self._name, self._metrics, self._spec, self._tag = plans, name, metrics, spec, tag
        self._resource_group, self._nic, self._state, self._key_url = resource_group, nic, state, key_url
        self.address = address
        self.node_tags = {CONTROLLER_TAG: address, KEY_TAG: key_url}

    def start(self, power: pulumi.Input[PowerConfig] | None = None) -> None:
        """Declares the controller VM: right away for a fixed cluster (where it always was), after the node groups
        for an elastic one, whose power config names the groups' scale sets (by id, built from their names: the
        scale sets name the controller's address, never the VM)."""
        spec, stack, name, role = self._spec, pulumi.get_stack(), self._name, f"{self._name}-slurm"
        child = pulumi.ResourceOptions(parent=self)
        custom_data = pulumi.Output.all(self.address, self._key_url, power).apply(
            lambda values: cloud_init.encode_user_data(
                controller_user_data(self._plans, name, values[0], values[1], self._metrics, values[2]), "azure"))
        server = private_vm(
            f"{role}-controller", self._tag("slurm-controller"),
            spec.scheduler.slurm.controller_instance_type or DEFAULT_VM_SIZE,
            controller_hostname(name), custom_data,
            pinned_reference(UBUNTU, spec.region, "pinned", pulumi.InvokeOutputOptions(parent=self)), self._nic.id,
            self._state.id, spec.access.ssh_public_key, spec.region, self._resource_group,
            # The NIC and the state disk are their own resources: the old VM must release them first. The image
            # version pinned at creation stays, as the monitoring server's: a newer Ubuntu release found by a later
            # `up` must not replace a running controller. cloud-init runs once: an elastic controller whose power
            # config changed (another `max`, another target) is replaced; the state disk keeps the queue.
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                depends_on=[self.key], delete_before_replace=True, ignore_changes=["storageProfile.imageReference"],
                replace_on_changes=["osProfile.customData"] if power is not None else None)))
        self.principal = server.identity.apply(lambda identity: identity.principal_id if identity else None)
        self.grant_key(f"{role}-key-access", self.principal, stack, name, child)
        self.outputs = {
            "slurm_controller_address": self.address,
            "slurm_shell": pulumi.Output.concat(
                "az network bastion ssh --name <bastion-name> --resource-group <bastion-resource-group> ",
                "--target-resource-id ", server.id, f" --auth-type ssh-key --username {ADMIN_USER} ",
                "--ssh-key <private-key>  # then: sinfo; squeue"),
        }
        self.register_outputs({"address": self.address, "vm_id": server.id})

    def grant_key(self, resource_name: str, principal: pulumi.Input[str], stack: str, name: str,
                  opts: pulumi.ResourceOptions) -> None:
        """`Key Vault Secrets User` on the munge key only (not the vault, not the subscription)."""
        grant_secret(resource_name, self.key.id, principal, stable_guid(stack, name, resource_name),
                     self.client.subscription_id, opts)

    def grant_nodes(self, name: str, principals: list[pulumi.Input[str]]) -> None:
        """The scale sets' identities read the key too (they exist only after the controller)."""
        for index, principal in enumerate(principals):
            self.grant_key(f"{name}-slurm-key-nodes-{index}", principal, pulumi.get_stack(), name,
                           pulumi.ResourceOptions(parent=self))


def controller_user_data(plans: NodeGroupPlans, name: str, address: str, key_url: str, metrics: bool = False,
                         power: PowerConfig | None = None) -> str:
    """`power`: the elastic groups' power config (None without elastic groups: the user data is unchanged)."""
    settings = elastic_settings(plans, name, address) if power else controller_settings(plans, name, address)
    return render_controller_cloud_config(ControllerConfig(
        cloud="azure", hostname=settings.controller_host, files=tuple(controller_files(settings).items()),
        munge_key_name=key_url, state_device=DATA_DEVICE, metrics=metrics, power=power))
