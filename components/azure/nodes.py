"""The GPU nodes: one Uniform Virtual Machine Scale Set (two for a mixed market), sized by `sku.capacity` only.

Settings for InfiniBand clusters (Azure "Set up InfiniBand"; shared/reference/networking-aws-azure-gcp.md 2.2):
Uniform orchestration, `singlePlacementGroup: true`, `platformFaultDomainCount: 1`, `overprovision: false` (extra VMs
would join the IB partition and the hostfile). Every input but `sku.capacity` is independent of the node count, so
changing `nodes` changes nothing else. `upgradePolicy: Manual`: a changed model (image, customData) reaches running
nodes only when the user reimages them, never in the middle of a job (Rolling with `rollout.enabled`; repair.py).

Access: SSH keys only (`disablePasswordAuthentication`), no public IP on any NIC, the cluster NSG on the NIC.
Disks: the OS disk is a Premium SSD managed disk, deleted with its VM (`deleteOption` is for Flexible scale sets
only), encrypted at rest by Azure Storage service-side encryption with platform-managed keys, which is always on.
Encryption at host (which also covers the temp/NVMe disks and host caches) needs the subscription feature `Microsoft.Compute/EncryptionAtHost` and size support, so it is not turned on here.
Spot: priority Spot, eviction policy Delete, maxPrice from `market.spot_max_price_per_hour` or -1 (never evicted for
price; pay the current spot price, at most pay-as-you-go), and Try & restore to regain the target count. Scheduled
Events give 30 s notice of eviction (`Preempt`); the terminate notification gives scale-in deletes 5 minutes where
the watcher runs to drain and acknowledge them. Unhealthy nodes are replaced automatically (repair.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure_native

from ..catalog.selector import Selection
from .elastic import ElasticTarget
from .fabric import accelerated_networking
from .identity import scale_set_identity
from .image import image_reference
from .image_version import pinned_reference
from .network import NodeNetwork
from .repair import (
    ELASTIC_IGNORE_CHANGES,
    automatic_repairs,
    elastic_lifecycle,
    health_extension_profile,
    scheduled_events,
    spot_restore,
    upgrade_policy,
)
from .security import Security
from .serving import scale_set_ignore_changes
from .tagging import Tagger

compute = azure_native.compute

ADMIN_USER = "azureuser"
REGULAR, SPOT = "Regular", "Spot"
EVICTION_POLICY = "Delete"
NO_PRICE_CAP = -1
OS_DISK_TYPE = "Premium_LRS"
OS_DISK_MAX_GIB = 4095  # Azure managed OS disks on Generation 2 VMs; every size in the catalog is Gen2
COMPUTER_NAME_PREFIX_MAX = 40


@dataclass(frozen=True)
class ScaleSetPlan:
    """One scale set: its role (child name suffix), priority and capacity; an elastic group's target also names its
    size, zone and physical name (`elastic.py`)."""

    role: str
    priority: str
    capacity: int
    target: ElasticTarget | None = None


def scale_set_plans(selection: Selection, targets: list[ElasticTarget] | None = None) -> list[ScaleSetPlan]:
    """on-demand or spot: one scale set. mixed: an on-demand base and a spot set, always both (either may be 0).
    An elastic group: one scale set per target, at capacity 0."""
    spec = selection.spec
    market = spec.market
    if targets is not None:
        return [ScaleSetPlan(target.role, SPOT if market.type == "spot" else REGULAR, 0, target) for target in targets]
    if market.type == "mixed":
        return [ScaleSetPlan("nodes", REGULAR, market.on_demand_base),
                ScaleSetPlan("spot-nodes", SPOT, spec.nodes - market.on_demand_base)]
    return [ScaleSetPlan("nodes", SPOT if market.type == "spot" else REGULAR, spec.nodes)]


def priority_args(plan: ScaleSetPlan, max_price: float | None) -> dict:
    """VM profile fields for the plan's priority."""
    if plan.priority == REGULAR:
        return {"priority": REGULAR}
    return {"priority": SPOT, "eviction_policy": EVICTION_POLICY,
            "billing_profile": compute.BillingProfileArgs(max_price=NO_PRICE_CAP if max_price is None else max_price)}


def computer_name_prefix(stack: str, name: str, plan: ScaleSetPlan) -> str:
    """Host names: `<stack>-<name>[-spot]` + six base-36 characters Azure appends; lowercase letters, digits, '-'."""
    base = re.sub(r"[^a-z0-9-]+", "-", f"{stack}-{name}".lower()).strip("-")[:COMPUTER_NAME_PREFIX_MAX].strip("-")
    suffix = "-spot" if plan.role == "spot-nodes" else ""  # an elastic node's Slurm name is not its host name
    return f"{base}{suffix}-"


def build_scale_sets(name: str, selection: Selection, single_placement_group: bool, node_network: NodeNetwork,
                     security: Security, proximity_group_id: pulumi.Input[str] | None, custom_data: pulumi.Input[str],
                     tag: Tagger, opts: pulumi.ResourceOptions,
                     backend_pool_id: pulumi.Input[str] | None = None,
                     ssh_public_key: pulumi.Input[str] | None = None,
                     targets: list[ElasticTarget] | None = None,
                     custom_data_by_size: dict[str, pulumi.Input[str]] | None = None,
                     ) -> list[azure_native.compute.VirtualMachineScaleSet]:
    """`ssh_public_key`: the key as given (possibly another resource's output). Default: the spec's. `targets`: an
    elastic group's scale sets (`elastic.elastic_targets`); `custom_data_by_size`: each target size's own node
    config (its fallback type's plan), else `custom_data`."""
    spec = selection.spec
    key = ssh_public_key if ssh_public_key is not None else spec.access.ssh_public_key
    image = pinned_reference(image_reference(spec), spec.region, spec.image.track,
                             pulumi.InvokeOutputOptions(parent=opts.parent))  # one lookup for every scale set
    by_size = custom_data_by_size or {}
    return [_scale_set(name, selection, plan, single_placement_group, node_network, security, proximity_group_id,
                       by_size.get(plan.target.instance.name, custom_data) if plan.target else custom_data, tag, opts,
                       image, backend_pool_id, key)
            for plan in scale_set_plans(selection, targets)]


def _scale_set(name: str, selection: Selection, plan: ScaleSetPlan, single_placement_group: bool,
               node_network: NodeNetwork, security: Security, proximity_group_id: pulumi.Input[str] | None,
               custom_data: pulumi.Input[str], tag: Tagger, opts: pulumi.ResourceOptions,
               image: dict[str, pulumi.Input[str]], backend_pool_id: pulumi.Input[str] | None = None,
               ssh_public_key: pulumi.Input[str] | None = None) -> azure_native.compute.VirtualMachineScaleSet:
    spec = selection.spec
    instance = plan.target.instance if plan.target else selection.instance
    profile = compute.VirtualMachineScaleSetVMProfileArgs(
        **priority_args(plan, spec.market.spot_max_price_per_hour),
        os_profile=_os_profile(name, selection, plan, custom_data, ssh_public_key),
        storage_profile=compute.VirtualMachineScaleSetStorageProfileArgs(
            image_reference=compute.ImageReferenceArgs(**image),
            os_disk=compute.VirtualMachineScaleSetOSDiskArgs(
                create_option="FromImage", caching="ReadWrite", os_type="Linux", disk_size_gb=spec.root_disk_gib,
                managed_disk=compute.VirtualMachineScaleSetManagedDiskParametersArgs(storage_account_type=OS_DISK_TYPE))),
        network_profile=compute.VirtualMachineScaleSetNetworkProfileArgs(network_interface_configurations=[
            compute.VirtualMachineScaleSetNetworkConfigurationArgs(
                name="nic", primary=True, enable_accelerated_networking=accelerated_networking(instance),
                network_security_group=compute.SubResourceArgs(id=security.nsg_id),
                ip_configurations=[compute.VirtualMachineScaleSetIPConfigurationArgs(
                    name="ipconfig", primary=True, subnet=compute.ApiEntityReferenceArgs(id=node_network.subnet_id),
                    application_security_groups=[compute.SubResourceArgs(id=security.asg_id)],
                    load_balancer_backend_address_pools=[compute.SubResourceArgs(id=backend_pool_id)] if backend_pool_id else None,
                )])]),
        diagnostics_profile=compute.DiagnosticsProfileArgs(boot_diagnostics=compute.BootDiagnosticsArgs(enabled=True)),
        scheduled_events_profile=scheduled_events(),
        extension_profile=health_extension_profile(),
    )
    zone = plan.target.zone if plan.target else spec.zone
    lifecycle = elastic_lifecycle(plan.priority) if plan.target else {
        "upgrade_policy": upgrade_policy(spec), "automatic_repairs_policy": automatic_repairs(),
        "spot_restore_policy": spot_restore(plan.priority)}
    ignored = scale_set_ignore_changes(spec) if plan.target is None else ELASTIC_IGNORE_CHANGES
    return compute.VirtualMachineScaleSet(
        f"{name}-{plan.role}", resource_group_name=node_network.resource_group_name, location=spec.region,
        **({"vm_scale_set_name": plan.target.scale_set_name} if plan.target else {}),
        orchestration_mode="Uniform", single_placement_group=single_placement_group, platform_fault_domain_count=1,
        overprovision=False, sku=compute.SkuArgs(name=instance.name, tier="Standard", capacity=plan.capacity),
        zones=[zone] if zone else None,
        proximity_placement_group=compute.SubResourceArgs(id=proximity_group_id) if proximity_group_id else None,
        identity=scale_set_identity(), **lifecycle,
        virtual_machine_profile=profile, tags=tag(plan.role),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=ignored)))


def _os_profile(name: str, selection: Selection, plan: ScaleSetPlan, custom_data: pulumi.Input[str],
                key: pulumi.Input[str] | None) -> azure_native.compute.VirtualMachineScaleSetOSProfileArgs:
    return compute.VirtualMachineScaleSetOSProfileArgs(
        computer_name_prefix=computer_name_prefix(pulumi.get_stack(), name, plan), admin_username=ADMIN_USER,
        custom_data=custom_data,
        linux_configuration=compute.LinuxConfigurationArgs(
            disable_password_authentication=True, provision_vm_agent=True,
            ssh=compute.SshConfigurationArgs(public_keys=[compute.SshPublicKeyArgs(
                path=f"/home/{ADMIN_USER}/.ssh/authorized_keys", key_data=key)])))
