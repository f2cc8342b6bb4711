"""`workload: inference` on GCP: an internal passthrough Network Load Balancer (regional backend service + health
check + forwarding rule) in front of the zonal MIG, and an autoscaler.

- The forwarding rule is INTERNAL on the cluster subnet, ports 8000/8001; there is no external address.
- The health check is HTTP GET /v2/health/ready on 8000 (Triton's readiness: models loaded and warmed).
- The backend service drains a leaving node for `deregistration_delay_seconds` (connection draining).
- The autoscaler tracks CPU, or the GPU utilisation or Triton request rate each node writes to Cloud Monitoring
  (custom.googleapis.com/gpufleet/triton/*, per gce_instance, with the node account's roles/monitoring.metricWriter);
  its initialization period covers boot plus model load, so a new node's start-up does not trigger more scale-out.
  (Not load-balancing utilisation: Google's autoscaler reads that from HTTP(S) load balancers only.)
- Firewall: Google's health-check ranges to 8000, and the subnet plus `load_balancer.client_cidrs` to the listener
  ports (a passthrough balancer keeps the client's address); Triton metrics like the exporters.
- The node's service account may read the model bucket (roles/storage.objectViewer on that bucket only).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import pulumi
import pulumi_gcp as gcp

from gpufleet.cloud_init.triton import GCP_METRIC_TYPES

from ..serving import HEALTH_PATH, fleet_size, listener_ports
from ..spec import ClusterSpec
from ..spec.inference import HTTP_PORT, METRICS_PORT
from .firewall_rule import FirewallRule

# Google's documented source ranges for load balancer health checks (Cloud Load Balancing, "Health checks overview").
HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")
BOOT_SECONDS = 600
OBJECT_VIEWER = "roles/storage.objectViewer"


def serving_firewalls(spec: ClusterSpec, vpc_role: str, subnet: str) -> list[FirewallRule]:
    if spec.inference is None:
        return []
    ports = tuple(str(p) for p in listener_ports(spec.inference))
    clients = (subnet, *spec.inference.load_balancer.client_cidrs)
    return [
        FirewallRule("fw-triton-health", vpc_role, (("tcp", (str(HTTP_PORT),)),), HEALTH_CHECK_RANGES,
                     "Triton readiness checks from Google's health checkers"),
        FirewallRule("fw-triton", vpc_role, (("tcp", ports),), clients,
                     "Triton from the cluster subnet and inference.load_balancer.client_cidrs"),
        FirewallRule("fw-triton-metrics", vpc_role, (("tcp", (str(METRICS_PORT),)),),
                     (subnet, *(str(c) for c in spec.access.monitoring_cidrs)),
                     "Triton metrics from the cluster subnet and access.monitoring_cidrs"),
    ]


def health_check_args(spec: ClusterSpec) -> dict:
    return {"check_interval_sec": 10, "timeout_sec": 5, "healthy_threshold": 2, "unhealthy_threshold": 2,
            "http_health_check": {"port": HTTP_PORT, "request_path": HEALTH_PATH}}


def autoscaler_policy(spec: ClusterSpec) -> dict | None:
    scaling = spec.inference.autoscaling if spec.inference else None
    if scaling is None:
        return None
    size = fleet_size(spec)
    target = scaling.target
    signal: dict[str, Any]
    if target.metric == "cpu_utilization":
        signal = {"cpu_utilization": {"target": target.value / 100}}
    else:
        # A per-instance metric: each node writes its own time series on its gce_instance, and the autoscaler
        # keeps the group's average near the target (Compute Engine's AutoscalingPolicyCustomMetricUtilization).
        signal = {"metrics": [{"name": GCP_METRIC_TYPES[target.metric], "target": target.value, "type": "GAUGE",
                               "filter": 'resource.type = "gce_instance"'}]}
    return {"min_replicas": size.min_nodes, "max_replicas": size.max_nodes, "mode": "ON",
            "cooldown_period": BOOT_SECONDS + spec.inference.model_load_seconds, **signal}


def group_ignore_changes(spec: ClusterSpec) -> list[str]:
    """The autoscaler owns an autoscaled group's size; `pulumi up` must not reset it."""
    return ["targetSize"] if spec.inference is not None and spec.inference.autoscaling else []


def build_serving(name: str, spec: ClusterSpec, network: pulumi.Input[str], subnetwork: pulumi.Input[str],
                  group: gcp.compute.InstanceGroupManager, account_email: pulumi.Input[str], describe,
                  opts: pulumi.ResourceOptions) -> gcp.compute.ForwardingRule:
    inference = spec.inference
    check = gcp.compute.RegionHealthCheck(f"{name}-health", region=spec.region, description=describe("health"),
                                          opts=opts, **health_check_args(spec))
    backend = gcp.compute.RegionBackendService(
        f"{name}-backend", region=spec.region, load_balancing_scheme="INTERNAL", protocol="TCP",
        health_checks=check.id, description=describe("backend"),
        connection_draining_timeout_sec=inference.load_balancer.deregistration_delay_seconds,
        backends=[{"group": group.instance_group, "balancing_mode": "CONNECTION"}], opts=opts)
    rule = gcp.compute.ForwardingRule(
        f"{name}-lb", region=spec.region, load_balancing_scheme="INTERNAL", ip_protocol="TCP",
        ports=[str(p) for p in listener_ports(inference)], backend_service=backend.id, network=network,
        subnetwork=subnetwork, allow_global_access=False, description=describe("lb"), opts=opts)
    policy = autoscaler_policy(spec)
    if policy is not None:
        gcp.compute.Autoscaler(f"{name}-autoscaler", zone=spec.zone, target=group.id, autoscaling_policy=policy,
                               description=describe("autoscaler"), opts=opts)
    bucket = urlparse(inference.model_repository).netloc
    gcp.storage.BucketIAMMember(f"{name}-models-reader", bucket=bucket, role=OBJECT_VIEWER,
                                member=pulumi.Output.concat("serviceAccount:", account_email), opts=opts)
    return rule
