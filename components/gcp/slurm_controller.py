"""The Slurm controller on GCP (`gpufleet:index:SlurmController`): one VM in the cluster subnet, no external IP,
reached through IAP like the monitoring server.

- address: a reserved internal address, so the address the nodes know survives a replaced VM;
- state: a separate pd-balanced disk (encrypted at rest, as every PD) for StateSaveLocation, kept when the VM is
  replaced; it appears as /dev/disk/by-id/google-slurm-state;
- munge key: a Secret Manager secret written once (gpufleet.scheduler.key); `secretAccessor` on that secret only,
  for the controller's own service account and the nodes' account;
- network: one rule admits slurmctld (6817) and srun's range to the controller's account from the nodes' account
  only; the nodes already admit the subnet (fw-internal), where the controller lives; IAP reaches port 22.
The nodes read the controller's address and the secret's name from their instance metadata, so their user data
names neither. Children are named f"{name}-slurm-{role}" (roles: sa, key, key-version, key-access, key-nodes,
address, state, fw, fw-iap, controller).
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from gpufleet.cloud_init.power.config import PowerConfig
from gpufleet.cloud_init.slurm_controller import ControllerConfig, render_controller_cloud_config

from ..groups.plans import NodeGroupPlans
from ..scheduler.conf import SLURMCTLD_PORT, SRUN_PORT_RANGE, controller_files, controller_settings
from ..scheduler.elastic import elastic_settings
from ..scheduler.key import keep_first_value, munge_key
from .elastic import prefix_of
from .labels import Describer, Labeler, short_name
from .private_instance import SECRET_ACCESSOR, iap_ssh_rule, private_instance

TYPE_TOKEN = "gpufleet:index:SlurmController"
DEFAULT_MACHINE_TYPE = "n2-standard-2"
STATE_DEVICE_NAME = "slurm-state"
ROOT_DISK_GB = 30
CONTROLLER_KEY = "gpufleet-slurm-controller"
KEY_KEY = "gpufleet-slurm-key"


def controller_names(stack: str, name: str) -> dict[str, str]:
    return {"instance": short_name(f"{name}-{stack}-slurmctld", 63), "account": short_name(f"{name}-{stack}-slurm", 30),
            "secret": short_name(f"{name}-{stack}-slurm-munge-key", 200, allowed="a-z0-9_-"),
            "address": short_name(f"{name}-{stack}-slurmctld", 63)}


class SlurmController(pulumi.ComponentResource):
    """slurmctld for one cluster; `node_metadata` goes on the nodes' template, `outputs` into the cluster's."""

    def __init__(self, name: str, plans: NodeGroupPlans, project: pulumi.Input[str], network_id: pulumi.Input[str],
                 subnet_id: pulumi.Input[str], node_account_email: pulumi.Input[str], label: Labeler,
                 describe: Describer, opts: pulumi.ResourceOptions, metrics: bool = False):
        super().__init__(TYPE_TOKEN, f"{name}-slurm", None, opts)
        spec, stack, role = plans.first.spec, pulumi.get_stack(), f"{name}-slurm"
        child = pulumi.ResourceOptions(parent=self)
        names = controller_names(stack, name)
        account = gcp.serviceaccount.Account(f"{role}-sa", account_id=names["account"], project=project,
                                             display_name=f"gpufleet {name} Slurm controller",
                                             description=describe("slurm-sa"), opts=child)
        email = pulumi.Output.concat(names["account"], "@", project, ".iam.gserviceaccount.com")
        secret = gcp.secretmanager.Secret(
            f"{role}-key", secret_id=names["secret"], project=project, labels=label("slurm-key"),
            replication=gcp.secretmanager.SecretReplicationArgs(auto=gcp.secretmanager.SecretReplicationAutoArgs()),
            opts=child)
        version = gcp.secretmanager.SecretVersion(f"{role}-key-version", secret=secret.id, secret_data=munge_key(),
                                                  opts=keep_first_value("gcp", child))
        for suffix, member in (("access", pulumi.Output.concat("serviceAccount:", email)),
                               ("nodes", pulumi.Output.concat("serviceAccount:", node_account_email))):
            gcp.secretmanager.SecretIamMember(f"{role}-key-{suffix}", secret_id=secret.id, project=project,
                                              role=SECRET_ACCESSOR, member=member,
                                              opts=pulumi.ResourceOptions.merge(
                                                  child, pulumi.ResourceOptions(depends_on=[account])))
        address = gcp.compute.Address(f"{role}-address", name=names["address"], project=project, region=spec.region,
                                      address_type="INTERNAL", subnetwork=subnet_id,
                                      description=describe("slurm-address"), opts=child)
        state = gcp.compute.Disk(f"{role}-state", zone=spec.zone, project=project,
                                 size=spec.scheduler.slurm.state_disk_gib, type="pd-balanced",
                                 labels=label("slurm-state"), description=describe("slurm-state"), opts=child)
        gcp.compute.Firewall(
            f"{role}-fw", network=network_id, project=project, direction="INGRESS", priority=1000,
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[
                str(SLURMCTLD_PORT), f"{SRUN_PORT_RANGE[0]}-{SRUN_PORT_RANGE[1]}"])],
            source_service_accounts=[node_account_email], target_service_accounts=[email],
            description=f"slurmctld and srun from the cluster's nodes; {describe('slurm-fw')}", opts=child)
        iap_ssh_rule(f"{role}-fw-iap", "the Slurm controller", "slurm-fw-iap", network_id, project, email, describe, child)
        self._role, self._spec, self._plans, self._name, self._metrics = role, spec, plans, name, metrics
        self._project, self._subnet_id, self._label, self._describe = project, subnet_id, label, describe
        self._state, self._depends = state, [account, version]
        self.key_name = pulumi.Output.concat("projects/", project, "/secrets/", names["secret"])
        self.instance_name = names["instance"]
        self.address = address.address
        self.account_email = email
        self.node_metadata = {CONTROLLER_KEY: address.address, KEY_KEY: self.key_name}

    def start(self, power: pulumi.Input[PowerConfig] | None = None, node_prefix: str = "") -> None:
        """Declares the controller VM, once the node groups are declared: an elastic cluster's user data names the
        groups' templates (`power`; `node_prefix` is the elastic groups' instance-name base), which name the
        controller's address, never the VM itself."""
        spec, role = self._spec, self._role
        child = pulumi.ResourceOptions(parent=self)
        user_data = pulumi.Output.all(self.address, self.key_name, power).apply(
            lambda values: controller_user_data(self._plans, self._name, values[0], values[1], self._metrics,
                                                values[2], node_prefix))
        server = private_instance(
            f"{role}-controller", "slurm-controller", "slurm-boot-disk", self.instance_name, spec.zone, self._project,
            spec.scheduler.slurm.controller_instance_type or DEFAULT_MACHINE_TYPE, ROOT_DISK_GB, self._state.id,
            STATE_DEVICE_NAME, self._subnet_id, self.account_email, user_data, self._label, self._describe,
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=self._depends)
                                         if power is None else replace_on_new_user_data(self._depends)),
            network_ip=self.address)
        self.outputs = {
            "slurm_controller_address": self.address,
            "slurm_shell": pulumi.Output.concat("gcloud compute ssh ", server.name, " --zone ", spec.zone,
                                                " --tunnel-through-iap  # then: sinfo; squeue"),
        }
        self.register_outputs({"address": self.address, "instance": server.name})


def replace_on_new_user_data(depends_on: list[pulumi.Resource]) -> pulumi.ResourceOptions:
    """cloud-init runs once: a new power config (a replaced template, another `max`) needs a new VM. The state disk
    and the reserved address stay, so the queue survives; the fixed name and the state disk mean delete first."""
    return pulumi.ResourceOptions(depends_on=depends_on, replace_on_changes=["metadata"], delete_before_replace=True)


def controller_user_data(plans: NodeGroupPlans, name: str, address: str, key_name: str, metrics: bool = False,
                         power: PowerConfig | None = None, node_prefix: str = "") -> str:
    """`power`: the elastic groups' power config (None without elastic groups: the user data is unchanged);
    `node_prefix`: the base of their instance names."""
    settings = elastic_settings(plans, name, address, prefix_of(node_prefix)) if power else \
        controller_settings(plans, name, address)
    return render_controller_cloud_config(ControllerConfig(
        cloud="gcp", hostname=settings.controller_host, files=tuple(controller_files(settings).items()),
        munge_key_name=key_name, state_device=f"/dev/disk/by-id/google-{STATE_DEVICE_NAME}",
        metrics=metrics, power=power))
