"""What each cloud declares for `workload: inference`: an internal load balancer whose health check is Triton's
readiness, the fleet attached to it and autoscaled with a delay covering model load, drain on scale-in, no public
address; and the endpoint, commands and serving cost in the outputs."""

from __future__ import annotations

import pytest

from tests.conftest import cached_plan, of_type, one

from .helpers import spec_for, stack_spec

READY = "/v2/health/ready"


def inputs(result, token: str) -> dict:
    return one(result, token).inputs


def test_aws_internal_nlb_with_readiness_checks_and_target_tracking():
    result = cached_plan(stack_spec("aws-infer"))
    lb = inputs(result, "aws:lb/loadBalancer:LoadBalancer")
    assert lb["internal"] is True and lb["loadBalancerType"] == "network" and lb["subnets"] == ["gpufleet-subnet-id"]
    groups = of_type(result, "aws:lb/targetGroup:TargetGroup")
    assert sorted(g.inputs["port"] for g in groups) == [8000, 8001]
    for group in groups:
        check = group.inputs["healthCheck"]
        assert (check["protocol"], check["path"], check["port"], check["matcher"]) == ("HTTP", READY, "8000", "200")
        # An integer, as pulumi-aws types it (Input[int]); "120" only worked because the bridge coerces it.
        assert type(group.inputs["deregistrationDelay"]) is int and group.inputs["deregistrationDelay"] == 120
        assert group.inputs["preserveClientIp"] == "false"
    attached = {a.inputs["lbTargetGroupArn"] for a in of_type(result, "aws:autoscaling/attachment:Attachment")}
    assert attached == {f"arn:mock:aws:lb/targetGroup:TargetGroup:gpufleet-tg-{p}" for p in (8000, 8001)}
    fleet = inputs(result, "aws:autoscaling/group:Group")
    assert (fleet["minSize"], fleet["maxSize"], fleet["desiredCapacity"]) == (2, 8, 2)
    assert fleet["healthCheckType"] == "ELB" and fleet["healthCheckGracePeriod"] >= 600 + 600
    assert "placementGroup" not in fleet
    policy = inputs(result, "aws:autoscaling/policy:Policy")
    assert policy["policyType"] == "TargetTrackingScaling" and policy["estimatedInstanceWarmup"] == 600
    assert policy["targetTrackingConfiguration"]["targetValue"] == 60
    assert not of_type(result, "aws:ec2/placementGroup:PlacementGroup")


def test_aws_nodes_accept_triton_only_from_the_load_balancer():
    result = cached_plan(stack_spec("aws-infer"))
    rules = {r.name: r.inputs for r in of_type(result, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")}
    for port in (8000, 8001):
        node_rule = rules[f"gpufleet-sg-triton-{port}"]
        assert node_rule["securityGroupId"] == "gpufleet-sg-id"
        assert node_rule["referencedSecurityGroupId"] == "gpufleet-lb-sg-id" and "cidrIpv4" not in node_rule
        assert rules[f"gpufleet-lb-sg-{port}-vpc"]["cidrIpv4"] == "10.0.0.0/16"
    assert not [r for r in rules.values() if r.get("cidrIpv4") == "0.0.0.0/0"]
    models = [r for r in of_type(result, "aws:iam/rolePolicy:RolePolicy") if r.name == "gpufleet-role-models"][0]
    assert '"arn:aws:s3:::my-models/triton/*"' in models.inputs["policy"] and "s3:PutObject" not in models.inputs["policy"]


def test_aws_internet_facing_is_an_explicit_tls_opt_in():
    arn = "arn:aws:acm:us-east-1:123456789012:certificate/abc"
    result = cached_plan(spec_for("aws", load_balancer={"internet_facing": True, "tls_certificate_arn": arn}))
    lb = inputs(result, "aws:lb/loadBalancer:LoadBalancer")
    assert lb["internal"] is False and lb["subnets"] == ["gpufleet-nat-subnet-id"]
    for listener in of_type(result, "aws:lb/listener:Listener"):
        assert listener.inputs["protocol"] == "TLS" and listener.inputs["certificateArn"] == arn
        assert listener.inputs["alpnPolicy"] == {8000: "HTTP1Only", 8001: "HTTP2Only"}[listener.inputs["port"]]
    assert result.outputs["inference_endpoint"].startswith("https://")


def test_gcp_internal_passthrough_lb_and_autoscaler():
    result = cached_plan(stack_spec("gcp-infer"))
    check = inputs(result, "gcp:compute/regionHealthCheck:RegionHealthCheck")
    assert check["httpHealthCheck"] == {"port": 8000, "requestPath": READY}
    backend = inputs(result, "gcp:compute/regionBackendService:RegionBackendService")
    assert backend["loadBalancingScheme"] == "INTERNAL" and backend["connectionDrainingTimeoutSec"] == 120
    assert backend["healthChecks"] == "gpufleet-health-id"
    rule = inputs(result, "gcp:compute/forwardingRule:ForwardingRule")
    assert rule["loadBalancingScheme"] == "INTERNAL" and rule["ports"] == ["8000", "8001"]
    assert rule["allowGlobalAccess"] is False
    policy = inputs(result, "gcp:compute/autoscaler:Autoscaler")["autoscalingPolicy"]
    assert (policy["minReplicas"], policy["maxReplicas"]) == (2, 8) and policy["cooldownPeriod"] >= 600
    assert policy["cpuUtilization"]["target"] == 0.6
    firewalls = {f.name: f.inputs for f in of_type(result, "gcp:compute/firewall:Firewall")}
    assert firewalls["gpufleet-fw-triton-health"]["sourceRanges"] == ["35.191.0.0/16", "130.211.0.0/22"]
    assert not [f for f in firewalls.values() if "0.0.0.0/0" in f["sourceRanges"]]
    assert inputs(result, "gcp:storage/bucketIAMMember:BucketIAMMember")["role"] == "roles/storage.objectViewer"
    assert not of_type(result, "gcp:compute/resourcePolicy:ResourcePolicy")


def test_azure_internal_standard_lb_probe_and_autoscale():
    result = cached_plan(stack_spec("azure-infer"))
    lb = inputs(result, "azure-native:network:LoadBalancer")
    assert lb["sku"]["name"] == "Standard"
    frontend = lb["frontendIPConfigurations"][0]
    assert "publicIPAddress" not in frontend and frontend["subnet"] == {"id": "gpufleet-subnet-id"}
    assert lb["probes"] == [{"intervalInSeconds": 5, "name": "triton-ready", "port": 8000, "probeThreshold": 2,
                             "protocol": "Http", "requestPath": READY}]
    assert sorted(r["frontendPort"] for r in lb["loadBalancingRules"]) == [8000, 8001]
    nodes = inputs(result, "azure-native:compute:VirtualMachineScaleSet")
    ip = nodes["virtualMachineProfile"]["networkProfile"]["networkInterfaceConfigurations"][0]["ipConfigurations"][0]
    assert ip["loadBalancerBackendAddressPools"] == [{"id": "gpufleet-lb-id/backendAddressPools/triton"}]
    assert "publicIPAddressConfiguration" not in ip
    profile = inputs(result, "azure-native:monitor:AutoscaleSetting")["profiles"][0]
    assert profile["capacity"] == {"default": "2", "maximum": "8", "minimum": "2"}
    out, scale_in = profile["rules"]
    assert out["metricTrigger"]["threshold"] == 60 and out["scaleAction"]["cooldown"] == "PT20M"
    assert scale_in["scaleAction"]["direction"] == "Decrease"
    nsg = inputs(result, "azure-native:network:NetworkSecurityGroup")["securityRules"]
    probe = [r for r in nsg if r["name"] == "allow-triton-probe"][0]
    assert probe["sourceAddressPrefix"] == "AzureLoadBalancer" and probe["priority"] < 4096
    assert result.outputs["inference_endpoint"] == "http://10.0.127.253:8000"


@pytest.mark.parametrize("stack", ["aws-infer", "azure-infer", "gcp-infer"])
def test_outputs_give_the_endpoint_commands_and_cost(stack):
    outputs = cached_plan(stack_spec(stack)).outputs
    endpoint = outputs["inference_endpoint"]
    assert outputs["inference_health_command"] == f"curl -fsS {endpoint}{READY}"
    assert outputs["inference_perf_command"].startswith("perf_analyzer -m resnet50 -u ")
    cost = outputs["inference_cost"]
    assert (cost["min_nodes"], cost["max_nodes"]) == (2, 8)
    assert cost["usd_per_hour_at_max"] == pytest.approx(4 * cost["usd_per_hour_at_min"], abs=0.02)
    per_node_hour = cost["usd_per_hour_at_min"] / 2
    expected = per_node_hour / (cost["requests_per_second_per_node"] * 3600) * 1e6
    assert cost["usd_per_million_requests"] == pytest.approx(expected, rel=0.01)
    assert "job_name: gpufleet-triton" in outputs["prometheus_scrape_config"]


def test_the_throughput_assumption_is_overridable():
    base = cached_plan(stack_spec("gcp-infer")).outputs["inference_cost"]
    doubled = cached_plan(spec_for("gcp", requests_per_second_per_node=800)).outputs["inference_cost"]
    assert doubled["usd_per_million_requests"] == pytest.approx(base["usd_per_million_requests"] / 2, rel=0.01)


def test_training_stacks_declare_no_serving():
    result = cached_plan(stack_spec("aws-train"))
    assert not of_type(result, "aws:lb/loadBalancer:LoadBalancer")
    fleet = inputs(result, "aws:autoscaling/group:Group")
    assert fleet["healthCheckType"] == "EC2" and fleet["minSize"] == fleet["maxSize"]
