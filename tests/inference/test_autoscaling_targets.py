"""Each autoscaling target on each cloud: what the autoscaler tracks, and that a node-published metric comes with
the node part that publishes it and the least permission it needs (so no target silently never scales)."""

from __future__ import annotations

import json

import pytest

from gpufleet.cloud_init.triton import AWS_METRIC_NAMESPACE, TRITON_ENV_PATH
from gpufleet.pipeline import plan_cluster
from gpufleet.spec import parse_cluster_spec
from tests.conftest import cached_plan, of_type, one

from .helpers import spec_for
from .test_node import env_of, files_of

PUBLISHER = "/usr/local/lib/gpufleet/triton-metrics"
PUBLISHER_UNIT = "gpufleet-triton-metrics.service"


def scaled_on(cloud: str, metric: str, value: float) -> dict:
    return spec_for(cloud, autoscaling={"min_nodes": 2, "max_nodes": 8, "target": {"metric": metric, "value": value}})


def user_data_files(spec: dict) -> dict[str, dict]:
    return files_of(plan_cluster(parse_cluster_spec(spec), name="gpufleet").cloud_config)


def role_policy(result, name: str) -> dict | None:
    found = [p for p in of_type(result, "aws:iam/rolePolicy:RolePolicy") if p.name == name]
    return json.loads(found[0].inputs["policy"]) if found else None


@pytest.mark.parametrize("metric, name, unit, value", [("gpu_utilization", "GPUUtilization", "Percent", 70),
                                                       ("requests_per_node", "RequestsPerSecond", "Count/Second", 400)])
def test_aws_tracks_the_metric_its_nodes_publish(metric, name, unit, value):
    spec = scaled_on("aws", metric, value)
    result = cached_plan(spec)
    tracking = one(result, "aws:autoscaling/policy:Policy").inputs["targetTrackingConfiguration"]
    assert "predefinedMetricSpecification" not in tracking and tracking["targetValue"] == value
    custom = tracking["customizedMetricSpecification"]
    assert (custom["namespace"], custom["metricName"], custom["statistic"], custom["unit"]) == (
        AWS_METRIC_NAMESPACE, name, "Average", unit)
    group = one(result, "aws:autoscaling/policy:Policy").inputs["autoscalingGroupName"]
    assert custom["metricDimensions"] == [{"name": "AutoScalingGroupName", "value": group}]  # the policy's own group
    statements = role_policy(result, "gpufleet-role-metrics")["Statement"]
    put = [s for s in statements if s["Action"] == "cloudwatch:PutMetricData"][0]
    assert put["Condition"] == {"StringEquals": {"cloudwatch:namespace": AWS_METRIC_NAMESPACE}}
    assert {s["Action"] for s in statements} == {"cloudwatch:PutMetricData", "autoscaling:DescribeAutoScalingInstances"}
    files = user_data_files(spec)
    assert PUBLISHER in files and "/usr/local/sbin/gpufleet-aws" in files
    triton = env_of(files[TRITON_ENV_PATH]["content"])
    assert (triton["GPUFLEET_TRITON_SCALE_METRIC"], triton["GPUFLEET_TRITON_METRIC_NAME"],
            triton["GPUFLEET_TRITON_METRIC_NAMESPACE"]) == (metric, name, AWS_METRIC_NAMESPACE)
    assert PUBLISHER_UNIT in files["/etc/gpufleet/node.env"]["content"]


def test_aws_cpu_target_publishes_nothing_and_grants_nothing():
    result = cached_plan(scaled_on("aws", "cpu_utilization", 60))
    tracking = one(result, "aws:autoscaling/policy:Policy").inputs["targetTrackingConfiguration"]
    assert tracking["predefinedMetricSpecification"] == {"predefinedMetricType": "ASGAverageCPUUtilization"}
    assert role_policy(result, "gpufleet-role-metrics") is None
    files = user_data_files(scaled_on("aws", "cpu_utilization", 60))
    assert PUBLISHER not in files and "GPUFLEET_TRITON_SCALE_METRIC" not in files[TRITON_ENV_PATH]["content"]


@pytest.mark.parametrize("metric, metric_type, value", [
    ("gpu_utilization", "custom.googleapis.com/gpufleet/triton/gpu_utilization", 70),
    ("requests_per_node", "custom.googleapis.com/gpufleet/triton/requests_per_second", 400)])
def test_gcp_autoscaler_tracks_the_per_instance_metric_its_nodes_write(metric, metric_type, value):
    spec = scaled_on("gcp", metric, value)
    result = cached_plan(spec)
    policy = one(result, "gcp:compute/autoscaler:Autoscaler").inputs["autoscalingPolicy"]
    assert "cpuUtilization" not in policy and policy["cooldownPeriod"] >= 600 + 600
    assert policy["metrics"] == [{"name": metric_type, "target": value, "type": "GAUGE",
                                  "filter": 'resource.type = "gce_instance"'}]
    roles = {m.inputs["role"] for m in of_type(result, "gcp:projects/iAMMember:IAMMember")}
    assert "roles/monitoring.metricWriter" in roles  # the node account may write the metric
    files = user_data_files(spec)
    assert PUBLISHER in files
    triton = env_of(files[TRITON_ENV_PATH]["content"])
    assert (triton["GPUFLEET_TRITON_SCALE_METRIC"], triton["GPUFLEET_TRITON_METRIC_TYPE"]) == (metric, metric_type)


def test_gcp_cpu_target_is_the_autoscalers_own():
    result = cached_plan(scaled_on("gcp", "cpu_utilization", 55))
    policy = one(result, "gcp:compute/autoscaler:Autoscaler").inputs["autoscalingPolicy"]
    assert policy["cpuUtilization"] == {"target": 0.55} and "metrics" not in policy


def test_azure_autoscale_is_on_the_scale_sets_cpu():
    result = cached_plan(scaled_on("azure", "cpu_utilization", 60))
    rules = one(result, "azure-native:monitor:AutoscaleSetting").inputs["profiles"][0]["rules"]
    assert {r["metricTrigger"]["metricName"] for r in rules} == {"Percentage CPU"}
    assert PUBLISHER not in user_data_files(scaled_on("azure", "cpu_utilization", 60))


def test_azure_scale_in_drains_through_the_terminate_notice():
    """Azure's load balancer has no deregistration delay: the scale set holds a removed node for its Terminate
    notice, and the node's watcher stops Triton (finishing in-flight requests) before acknowledging it."""
    result = cached_plan(scaled_on("azure", "cpu_utilization", 60))
    nodes = one(result, "azure-native:compute:VirtualMachineScaleSet").inputs["virtualMachineProfile"]
    notice = nodes["scheduledEventsProfile"]["terminateNotificationProfile"]
    assert notice == {"enable": True, "notBeforeTimeout": "PT5M"}
    files = user_data_files(scaled_on("azure", "cpu_utilization", 60))
    assert "systemctl stop gpufleet-triton.service" in files["/etc/gpufleet/drain-hook"]["content"]
    assert env_of(files["/etc/gpufleet/node.env"]["content"])["GPUFLEET_SPOT_WATCHER"] == "1"
