"""The instance template every node boots from and the zonal managed instance group that runs `nodes` of them.

Template: the machine type (its GPUs come with it), one NIC per fabric slot with no external IP (no access
config), the dedicated service account, Shielded VM where the image supports it, a boot disk encrypted at rest
with Google-managed keys (Compute Engine's default; CMEK is not exposed by the spec yet), OS Login, project SSH keys
blocked, and the cloud-init user data in the `user-data` metadata key. Nothing in it depends on the node count.

Scheduling (GPU VMs cannot live-migrate; compact placement and spot require the same): onHostMaintenance
TERMINATE and automaticRestart false. Spot adds provisioningModel SPOT, preemptible true and
instanceTerminationAction DELETE: the group then recreates a preempted node when capacity returns (STOP would leave
a stopped VM holding its disk; reference 3.4). A reservation-only type (A4X, A4, A3 Ultra) in its reservation is
RESERVATION_BOUND: Google stops it (its default termination action) when the reservation ends.

Group: zonal, `target_size = nodes` (the only input that changes with the node count), autohealing from the node's
health endpoint, and recreated nodes on the current template (repair.py). Updates are OPPORTUNISTIC unless
`rollout.enabled`: a new template reaches a node only when the node is recreated, never by restarting a running
training job.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..catalog.models import InstanceType
from ..catalog.selector import Selection
from ..spec import ClusterSpec
from .fabric import NicSlot
from .gpudirect.delivery import tcpxo_delivered
from .image import BootImage
from .labels import Describer, Labeler, short_name
from .network import ClusterNetworks
from .repair import auto_healing, lifecycle_policy, update_policy
from .serving import group_ignore_changes

TERMINATE = "TERMINATE"
SPOT = "SPOT"
STANDARD = "STANDARD"
RESERVATION_BOUND = "RESERVATION_BOUND"
SPOT_TERMINATION_ACTION = "DELETE"
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"  # access is decided by IAM roles
DEFAULT_BOOT_DISK_TYPE = "pd-balanced"
RESERVATION_KEY = "compute.googleapis.com/reservation-name"


def scheduling(spec: ClusterSpec, instance: InstanceType) -> dict:
    """The template's scheduling block (snake_case, as `InstanceTemplateSchedulingArgs` takes it). A type Google
    sells only through future reservations (A4X, A4, A3 Ultra) consumes its reservation as a reservation-bound VM,
    which is what Google documents for that capacity and what its A4 and A3 Ultra blueprints set beside the
    reservation (cluster-toolkit a4high-vm.yaml, a3ultra-vm.yaml)."""
    block = {"on_host_maintenance": TERMINATE, "automatic_restart": False, "provisioning_model": STANDARD,
             "preemptible": False}
    if spec.market.type == "spot":
        block.update(provisioning_model=SPOT, preemptible=True, instance_termination_action=SPOT_TERMINATION_ACTION)
    elif instance.on_demand_needs_reservation and spec.market.capacity_reservation_id is not None:
        block.update(provisioning_model=RESERVATION_BOUND)
    return block


def node_metadata(user_data: pulumi.Input[str],
                  extra: dict[str, pulumi.Input[str]] | None = None) -> dict[str, pulumi.Input[str]]:
    """OS Login for SSH (IAM-controlled keys), no project-wide SSH keys, and cloud-init's user data; `extra`: the
    Slurm controller's address and key name, read by the node from its metadata server."""
    return {"block-project-ssh-keys": "TRUE", "enable-oslogin": "TRUE", "user-data": user_data, **(extra or {})}


def base_instance_name(stack: str, name: str, unique: str) -> str:
    """Node names are `<base>-xxxx`. `unique` (`naming.cluster_hash`) ends the base, so no cluster's prefix is a
    prefix of another's: `gpufleet-gcp-dev-<hash>-` never matches `gpufleet-gcp-dev-b-<hash>-xxxx`, and two
    projects with the same stack name differ too."""
    return f"{short_name(f'{name}-{stack}', 40 - len(unique) - 1)}-{unique}"


def build_template(name: str, selection: Selection, networks: ClusterNetworks, nics: list[NicSlot],
                   image: BootImage, account_email: pulumi.Input[str], user_data: pulumi.Input[str],
                   placement_policy: pulumi.Input[str] | None, label: Labeler, describe: Describer,
                   opts: pulumi.ResourceOptions,
                   extra_metadata: dict[str, pulumi.Input[str]] | None = None) -> gcp.compute.InstanceTemplate:
    spec, instance = selection.spec, selection.instance
    return gcp.compute.InstanceTemplate(
        f"{name}-template",
        machine_type=instance.name,
        description=describe("template"),
        instance_description=f"gpufleet {instance.name} node",
        labels=label("node"),
        metadata=node_metadata(user_data, extra_metadata),
        can_ip_forward=False,
        disks=[gcp.compute.InstanceTemplateDiskArgs(
            boot=True, auto_delete=True, source_image=image.source, disk_size_gb=spec.root_disk_gib,
            disk_type=instance.extra.get("boot_disk_type", DEFAULT_BOOT_DISK_TYPE), labels=label("boot-disk"))],
        network_interfaces=[gcp.compute.InstanceTemplateNetworkInterfaceArgs(
            network=networks.vpcs[slot.vpc_role].id, subnetwork=networks.subnets[slot.subnet_role].id,
            nic_type=slot.nic_type, stack_type="IPV4_ONLY") for slot in nics],
        scheduling=gcp.compute.InstanceTemplateSchedulingArgs(**scheduling(spec, instance)),
        service_account=gcp.compute.InstanceTemplateServiceAccountArgs(email=account_email,
                                                                       scopes=[CLOUD_PLATFORM_SCOPE]),
        shielded_instance_config=gcp.compute.InstanceTemplateShieldedInstanceConfigArgs(
            enable_secure_boot=not tcpxo_delivered(selection), enable_vtpm=True, enable_integrity_monitoring=True) if image.shielded else None,
        resource_policies=placement_policy,
        reservation_affinity=_reservation(spec),
        opts=opts,
    )


def build_group(name: str, selection: Selection, template: gcp.compute.InstanceTemplate, base_name: str,
                describe: Describer, opts: pulumi.ResourceOptions,
                health_check: gcp.compute.HealthCheck | None = None,
                workload_policy: gcp.compute.ResourcePolicy | None = None) -> gcp.compute.InstanceGroupManager:
    spec = selection.spec
    return gcp.compute.InstanceGroupManager(
        f"{name}-nodes",
        zone=spec.zone,
        base_instance_name=base_name,
        description=describe("nodes"),
        target_size=spec.nodes,  # the starting size; an inference autoscaler owns it afterwards
        versions=[gcp.compute.InstanceGroupManagerVersionArgs(name="nodes", instance_template=template.id)],
        update_policy=update_policy(spec),
        auto_healing_policies=auto_healing(health_check) if health_check else None,
        instance_lifecycle_policy=lifecycle_policy(),
        resource_policies=gcp.compute.InstanceGroupManagerResourcePoliciesArgs(
            workload_policy=workload_policy.self_link) if workload_policy else None,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=group_ignore_changes(spec))),
    )


def _reservation(spec: ClusterSpec) -> gcp.compute.InstanceTemplateReservationAffinityArgs | None:
    """`market.capacity_reservation_id` names a specific Compute Engine reservation to consume."""
    reservation = spec.market.capacity_reservation_id
    if reservation is None:
        return None
    return gcp.compute.InstanceTemplateReservationAffinityArgs(
        type="SPECIFIC_RESERVATION",
        specific_reservation=gcp.compute.InstanceTemplateReservationAffinitySpecificReservationArgs(
            key=RESERVATION_KEY, values=[reservation]))
