"""Self-repair and roll-outs for the managed instance group.

Autohealing: an HTTP health check on the node's health endpoint (the node's own acceptance check, served by the
node) recreates a node that fails it, after an initial delay that covers first boot (driver install and reboot on
stock images). `force_update_on_repair: YES` makes a recreated node (repaired or preempted) boot the group's current
template, not the one it was created from. Google's health-check probes come from 35.191.0.0/16 and 130.211.0.0/22
(Cloud Load Balancing "Firewall rules" for health checks), so one firewall rule admits exactly those on that port.

Updates stay OPPORTUNISTIC (a new template reaches a node only when it is recreated) unless `rollout.enabled`, which
makes them PROACTIVE with `rollout.max_unavailable` nodes at a time and no surge (GPU capacity is scarce).
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from gpufleet.cloud_init.endpoints import HEALTH_ENDPOINT_PATH, HEALTH_ENDPOINT_PORT

from ..spec import ClusterSpec
from .labels import Describer

HEALTH_CHECK_SOURCES = ("35.191.0.0/16", "130.211.0.0/22")
FIRST_BOOT_DELAY_SEC = 1800  # stock images install the driver and reboot before the first healthy answer
CHECK_INTERVAL_SEC = 30
UNHEALTHY_THRESHOLD = 4  # two minutes of failed answers before a node is recreated


def build_health_check(name: str, describe: Describer, opts: pulumi.ResourceOptions) -> gcp.compute.HealthCheck:
    return gcp.compute.HealthCheck(
        f"{name}-health", description=describe("health"), check_interval_sec=CHECK_INTERVAL_SEC, timeout_sec=10,
        healthy_threshold=1, unhealthy_threshold=UNHEALTHY_THRESHOLD,
        http_health_check=gcp.compute.HealthCheckHttpHealthCheckArgs(
            port=HEALTH_ENDPOINT_PORT, request_path=HEALTH_ENDPOINT_PATH),
        opts=opts)


def auto_healing(health_check: gcp.compute.HealthCheck) -> gcp.compute.InstanceGroupManagerAutoHealingPoliciesArgs:
    return gcp.compute.InstanceGroupManagerAutoHealingPoliciesArgs(
        health_check=health_check.id, initial_delay_sec=FIRST_BOOT_DELAY_SEC)


def lifecycle_policy() -> gcp.compute.InstanceGroupManagerInstanceLifecyclePolicyArgs:
    return gcp.compute.InstanceGroupManagerInstanceLifecyclePolicyArgs(
        force_update_on_repair="YES", default_action_on_failure="REPAIR")


def update_policy(spec: ClusterSpec) -> gcp.compute.InstanceGroupManagerUpdatePolicyArgs:
    rollout = spec.rollout
    return gcp.compute.InstanceGroupManagerUpdatePolicyArgs(
        type="PROACTIVE" if rollout.enabled else "OPPORTUNISTIC", minimal_action="REPLACE",
        replacement_method="RECREATE", max_surge_fixed=0,
        max_unavailable_fixed=rollout.max_unavailable if rollout.enabled else 1)
