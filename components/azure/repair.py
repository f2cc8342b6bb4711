"""Self-repair, spot restore, termination notices and roll-outs for the scale sets.

Repair: the Application Health extension (Linux, HTTP) asks the node's own health endpoint, which serves the node's
acceptance result, and `automaticRepairsPolicy` replaces an instance that stays unhealthy after a grace period that
covers first boot (driver install and reboot). Azure allows a grace period of 10 to 90 minutes.

Spot restore (`spotRestorePolicy`, "Try & restore" in "Azure Spot Virtual Machines for Virtual Machine Scale Sets"):
with eviction policy Delete a scale set shrinks at every eviction; Try & restore brings evicted instances back to
the target count when capacity returns. Azure disables it only for scale sets that use Autoscale, which training
scale sets do not. (The documentation's template pairs it with `singlePlacementGroup: false`, but lists no
restriction for single-placement-group InfiniBand scale sets; unverified there.)

Termination notices: `terminateNotificationProfile` holds a delete, scale-in or repair for up to five minutes so
that the node's watcher (on every node) can drain and acknowledge the `Terminate` event; the acknowledgement lets the
delete go ahead at once.

Elastic groups (`elastic.py`): the power programs own every instance, so Azure deletes or replaces none by itself:
automatic repairs and Try & restore are off, the upgrade policy is Manual, and `sku.capacity` is ignored after
creation (`elastic_lifecycle`, `ELASTIC_IGNORE_CHANGES`).

Roll-outs: `upgradePolicy` stays Manual (a changed model reaches a node only when it is reimaged or replaced), or
Rolling with `rollout.enabled`, replacing `rollout.max_unavailable` nodes per batch (health-gated by the extension).
"""

from __future__ import annotations

import math

import pulumi_azure_native as azure_native

from gpufleet.cloud_init.endpoints import HEALTH_ENDPOINT_PATH, HEALTH_ENDPOINT_PORT

from ..spec import ClusterSpec

compute = azure_native.compute

HEALTH_EXTENSION = {"publisher": "Microsoft.ManagedServices", "type": "ApplicationHealthLinux",
                    "type_handler_version": "2.0"}
REPAIR_GRACE_PERIOD = "PT60M"  # first boot on stock images: driver install and reboot before the first answer
SPOT_RESTORE_TIMEOUT = "PT1H"
TERMINATE_NOTICE = "PT5M"


def health_extension_profile() -> azure_native.compute.VirtualMachineScaleSetExtensionProfileArgs:
    return compute.VirtualMachineScaleSetExtensionProfileArgs(extensions=[compute.VirtualMachineScaleSetExtensionArgs(
        name="gpufleet-health", auto_upgrade_minor_version=True, **HEALTH_EXTENSION,
        settings={"protocol": "http", "port": HEALTH_ENDPOINT_PORT, "requestPath": HEALTH_ENDPOINT_PATH,
                  "intervalInSeconds": 30, "numberOfProbes": 4})])


def automatic_repairs() -> azure_native.compute.AutomaticRepairsPolicyArgs:
    return compute.AutomaticRepairsPolicyArgs(enabled=True, grace_period=REPAIR_GRACE_PERIOD, repair_action="Replace")


def spot_restore(priority: str) -> azure_native.compute.SpotRestorePolicyArgs | None:
    if priority != "Spot":
        return None
    return compute.SpotRestorePolicyArgs(enabled=True, restore_timeout=SPOT_RESTORE_TIMEOUT)


ELASTIC_IGNORE_CHANGES = ["sku.capacity"]
"""The power programs raise the capacity and delete instances by id; `pulumi up` must never set it back to 0."""


def elastic_lifecycle(priority: str) -> dict:
    """An elastic scale set's upgrade, repair and restore settings (keyword arguments of VirtualMachineScaleSet)."""
    return {"upgrade_policy": compute.UpgradePolicyArgs(mode="Manual"),
            "automatic_repairs_policy": compute.AutomaticRepairsPolicyArgs(enabled=False),
            "spot_restore_policy": compute.SpotRestorePolicyArgs(enabled=False) if priority == "Spot" else None}


def scheduled_events() -> azure_native.compute.ScheduledEventsProfileArgs:
    return compute.ScheduledEventsProfileArgs(terminate_notification_profile=compute.TerminateNotificationProfileArgs(
        enable=True, not_before_timeout=TERMINATE_NOTICE))


def upgrade_policy(spec: ClusterSpec) -> azure_native.compute.UpgradePolicyArgs:
    rollout = spec.rollout
    if not rollout.enabled:
        return compute.UpgradePolicyArgs(mode="Manual")
    batch = max(1, math.ceil(rollout.max_unavailable * 100 / spec.nodes))
    return compute.UpgradePolicyArgs(mode="Rolling", rolling_upgrade_policy=compute.RollingUpgradePolicyArgs(
        max_batch_instance_percent=min(batch, 100), max_unhealthy_instance_percent=100,
        max_unhealthy_upgraded_instance_percent=batch, pause_time_between_batches="PT0S",
        prioritize_unhealthy_instances=True))
