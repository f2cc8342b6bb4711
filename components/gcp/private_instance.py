"""The small private VM both the monitoring server and the Slurm controller are: one shape, so a hardening of one
(Shielded VM, OS Login, no external IP, project SSH keys blocked) is the other's too.

- Ubuntu 24.04 from its image family, resolved when the VM is created and kept (`ignore_changes`): a newer release
  found by a later `up` does not replace a running server;
- its own service account with the cloud-platform scope (what it may do is what its roles grant);
- a separate pd-balanced data disk, attached under a device name (/dev/disk/by-id/google-<name>), that outlives it;
- no access config (no external IP); SSH only through IAP, to this account's VMs only.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from .labels import Describer, Labeler
from .nodes import CLOUD_PLATFORM_SCOPE
from .security import IAP_RANGE, SSH_PORT

UBUNTU_IMAGE = "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64"
SECRET_ACCESSOR = "roles/secretmanager.secretAccessor"


def iap_ssh_rule(resource_name: str, what: str, describe_role: str, network_id: pulumi.Input[str],
                 project: pulumi.Input[str], email: pulumi.Input[str], describe: Describer,
                 opts: pulumi.ResourceOptions) -> gcp.compute.Firewall:
    """Port 22 from IAP's range to the VMs of `email` only, for `gcloud compute ssh --tunnel-through-iap`."""
    return gcp.compute.Firewall(
        resource_name, network=network_id, project=project, direction="INGRESS", priority=1000,
        allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(SSH_PORT)])], source_ranges=[IAP_RANGE],
        target_service_accounts=[email], description=f"SSH through IAP to {what}; {describe(describe_role)}",
        opts=opts)


def private_instance(resource_name: str, role: str, boot_disk_role: str, instance_name: str, zone: str, project: pulumi.Input[str],
                     machine_type: str, root_disk_gb: int, data_disk_id: pulumi.Input[str], device_name: str,
                     subnet_id: pulumi.Input[str], email: pulumi.Input[str], user_data: pulumi.Input[str],
                     label: Labeler, describe: Describer, opts: pulumi.ResourceOptions,
                     network_ip: pulumi.Input[str] | None = None) -> gcp.compute.Instance:
    """`role` names its labels and description, `boot_disk_role` its boot disk's labels; `opts` carries its
    dependencies."""
    return gcp.compute.Instance(
        resource_name, name=instance_name, zone=zone, project=project, machine_type=machine_type,
        boot_disk=gcp.compute.InstanceBootDiskArgs(initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
            image=UBUNTU_IMAGE, size=root_disk_gb, type="pd-balanced", labels=label(boot_disk_role))),
        attached_disks=[gcp.compute.InstanceAttachedDiskArgs(source=data_disk_id, device_name=device_name)],
        network_interfaces=[gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=subnet_id,  # no access config
                                                                     network_ip=network_ip)],
        service_account=gcp.compute.InstanceServiceAccountArgs(email=email, scopes=[CLOUD_PLATFORM_SCOPE]),
        shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_vtpm=True, enable_integrity_monitoring=True),
        metadata={"block-project-ssh-keys": "TRUE", "enable-oslogin": "TRUE", "user-data": user_data},
        labels=label(role), allow_stopping_for_update=True, description=describe(role),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["bootDisk.initializeParams.image"])))
