"""`workload: inference` on AWS: an internal Network Load Balancer in front of the Auto Scaling group.

Why a Network Load Balancer: the nodes sit in one subnet of one AZ, which an NLB serves (an ALB needs two AZs),
and gRPC on 8001 passes through a TCP listener without a certificate (an ALB serves gRPC only on HTTPS).
- Internal by default, in the nodes' subnet. `internet_facing: true` (with `tls_certificate_arn`) puts it in the
  public NAT subnet with TLS listeners; the nodes stay private.
- The load balancer has its own security group: listener ports from the VPC and `load_balancer.client_cidrs`.
  The nodes accept 8000/8001 only from that group (client IP preservation is off, so the source is the NLB).
- Target groups health-check Triton's readiness, GET /v2/health/ready on 8000 (200 only after load and warm-up),
  and keep a leaving node for `deregistration_delay_seconds`; the group waits for that before terminating it.
- Target tracking on the group's average CPU, or on the nodes' own GPU utilisation or Triton request rate, which
  each node publishes to CloudWatch (namespace gpufleet/Inference, dimension AutoScalingGroupName); the instance
  warm-up is the model load time. (Not ALBRequestCountPerTarget: that metric exists for an ALB only.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pulumi
import pulumi_aws as aws

from gpufleet.cloud_init.triton import AWS_METRIC_NAMES, AWS_METRIC_NAMESPACE

from ..serving import HEALTH_PATH, fleet_size, listener_ports, published_metric
from ..spec import ClusterSpec
from ..spec.inference import GRPC_PORT, HTTP_PORT, METRICS_PORT
from .tagging import Tagger

if TYPE_CHECKING:
    # The SDK's own classes, from the one module pyproject's mypy override lets the type checker read (the rest of
    # the SDK is `Any` to it). Not imported by this path at run time: pulumi_aws loads `lb` lazily, and importing its
    # submodule first leaves `aws.lb` without `TargetGroup`.
    from pulumi_aws.lb.target_group import TargetGroupArgs, TargetGroupHealthCheckArgs

HEALTH_INTERVAL_SEC = 10
HEALTH_THRESHOLD = 2
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
HEALTH_CHECK_GRACE_SEC = 1200  # a stock-Ubuntu node installs the driver and reboots before its health check
BOOT_SECONDS = HEALTH_CHECK_GRACE_SEC
# TLS listeners negotiate HTTP/2 for gRPC clients (which require it through ALPN) and HTTP/1.1 for the HTTP port.
ALPN = {HTTP_PORT: "HTTP1Only", GRPC_PORT: "HTTP2Only"}
PUBLISHED_UNITS = {"gpu_utilization": "Percent", "requests_per_node": "Count/Second"}


@dataclass(frozen=True)
class Serving:
    load_balancer: aws.lb.LoadBalancer
    target_groups: list[aws.lb.TargetGroup]


def group_args(spec: ClusterSpec) -> dict:
    """The Auto Scaling group's size and health-check arguments: fixed size and EC2 checks for training; the
    autoscaling range, load-balancer checks and a grace covering boot plus model load for inference."""
    size = fleet_size(spec)
    args = {"min_size": size.min_nodes, "max_size": size.max_nodes, "desired_capacity": size.desired,
            "health_check_type": "EC2", "health_check_grace_period": HEALTH_CHECK_GRACE_SEC}
    if spec.inference is not None:
        grace = BOOT_SECONDS + spec.inference.model_load_seconds
        args.update(health_check_type="ELB", health_check_grace_period=grace,
                    default_instance_warmup=spec.inference.model_load_seconds)
    return args


def group_ignore_changes(spec: ClusterSpec) -> list[str]:
    """The autoscaler owns the desired capacity of an autoscaled group, and the attachments own its target groups
    (the provider's documented pairing with `aws.autoscaling.Attachment`); `pulumi up` must not reset either."""
    if spec.inference is None:
        return []
    return ["targetGroupArns", "loadBalancers"] + (["desiredCapacity"] if spec.inference.autoscaling else [])


def target_group_args(spec: ClusterSpec, port: int, vpc_id: pulumi.Input[str],
                      tags: dict[str, str]) -> TargetGroupArgs:
    """The SDK's typed arguments (the delay is an integer; the health check's port a string, as the provider has it),
    built through names the type checker reads as the SDK's classes."""
    lb = spec.inference.load_balancer
    group_args: type[TargetGroupArgs] = aws.lb.TargetGroupArgs
    check_args: type[TargetGroupHealthCheckArgs] = aws.lb.TargetGroupHealthCheckArgs
    return group_args(
        port=port, protocol="TCP", target_type="instance", preserve_client_ip="false", vpc_id=vpc_id, tags=tags,
        region=spec.region, deregistration_delay=lb.deregistration_delay_seconds,
        health_check=check_args(
            enabled=True, protocol="HTTP", port=str(HTTP_PORT), path=HEALTH_PATH, matcher="200",
            interval=HEALTH_INTERVAL_SEC, healthy_threshold=HEALTH_THRESHOLD, unhealthy_threshold=HEALTH_THRESHOLD))


def model_read_policy(uri: str) -> dict:
    """Read-only access to the repository's prefix for the nodes' role (s3 sync lists, then gets)."""
    parsed = urlparse(uri)
    bucket, prefix = parsed.netloc, parsed.path.strip("/")
    objects = f"arn:aws:s3:::{bucket}/{prefix}/*" if prefix else f"arn:aws:s3:::{bucket}/*"
    listing: dict[str, object] = {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{bucket}"}
    if prefix:
        listing["Condition"] = {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}}
    return {"Version": "2012-10-17", "Statement": [
        listing, {"Effect": "Allow", "Action": "s3:GetObject", "Resource": objects}]}


def scaling_metric(spec: ClusterSpec, group_name: pulumi.Input[str]) -> dict:
    """What target tracking follows: the group's average CPU (EC2's own metric), or the per-node metric the nodes
    publish to CloudWatch (GPU utilisation or Triton requests per second), averaged over the group's nodes."""
    metric = spec.inference.autoscaling.target.metric
    if metric == "cpu_utilization":
        return {"predefined_metric_specification": {"predefined_metric_type": "ASGAverageCPUUtilization"}}
    return {"customized_metric_specification": {
        "namespace": AWS_METRIC_NAMESPACE, "metric_name": AWS_METRIC_NAMES[metric], "statistic": "Average",
        "unit": PUBLISHED_UNITS[metric],
        "metric_dimensions": [{"name": "AutoScalingGroupName", "value": group_name}]}}


def scaling_policy_args(spec: ClusterSpec, group_name: pulumi.Input[str]) -> dict | None:
    scaling = spec.inference.autoscaling if spec.inference else None
    if scaling is None:
        return None
    return {"policy_type": "TargetTrackingScaling", "estimated_instance_warmup": spec.inference.model_load_seconds,
            "target_tracking_configuration": {**scaling_metric(spec, group_name),
                                              "target_value": scaling.target.value, "disable_scale_in": False}}


def metric_publish_policy() -> dict:
    """The node's own metric: PutMetricData in gpufleet's namespace only (the action has no resources to name, the
    namespace condition is CloudWatch's documented limit), and DescribeAutoScalingInstances (a read with no
    resource-level permissions) to learn its group, the metric's dimension."""
    return {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "cloudwatch:PutMetricData", "Resource": "*",
         "Condition": {"StringEquals": {"cloudwatch:namespace": AWS_METRIC_NAMESPACE}}},
        {"Effect": "Allow", "Action": "autoscaling:DescribeAutoScalingInstances", "Resource": "*"}]}


def build_serving(name: str, spec: ClusterSpec, vpc_id: pulumi.Input[str], vpc_cidr: pulumi.Input[str],
                  subnet_id: pulumi.Input[str], public_subnet_id: pulumi.Input[str] | None,
                  node_group: aws.ec2.SecurityGroup, node_role: pulumi.Input[str], fleet: aws.autoscaling.Group, tag: Tagger,
                  opts: pulumi.ResourceOptions) -> Serving:
    inference = spec.inference
    lb_args = inference.load_balancer
    ports = listener_ports(inference)
    lb_group = aws.ec2.SecurityGroup(f"{name}-lb-sg", vpc_id=vpc_id, tags=tag("lb-sg"), region=spec.region, opts=opts,
                                     description="gpufleet inference load balancer: Triton ports from clients")
    sources = [("vpc", vpc_cidr)] + [(str(i), cidr) for i, cidr in enumerate(lb_args.client_cidrs)]
    for port in ports:
        for key, cidr in sources:
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-lb-sg-{port}-{key}", security_group_id=lb_group.id, ip_protocol="tcp", from_port=port,
                to_port=port, cidr_ipv4=cidr, description=f"Triton {port} from clients", tags=tag("lb-sg"), region=spec.region, opts=opts)
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-sg-triton-{port}", security_group_id=node_group.id, ip_protocol="tcp", from_port=port,
            to_port=port, referenced_security_group_id=lb_group.id, description=f"Triton {port} from the load balancer",
            tags=tag("sg-triton"), region=spec.region, opts=opts)
    for index, monitoring_cidr in enumerate(spec.access.monitoring_cidrs):
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-sg-triton-metrics-{index}", security_group_id=node_group.id, ip_protocol="tcp",
            from_port=METRICS_PORT, to_port=METRICS_PORT, cidr_ipv4=str(monitoring_cidr), tags=tag("sg-triton"), region=spec.region, opts=opts,
            description="Triton metrics scrape from access.monitoring_cidrs")
    if HTTP_PORT not in ports:
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-sg-triton-health", security_group_id=node_group.id, ip_protocol="tcp", from_port=HTTP_PORT,
            to_port=HTTP_PORT, referenced_security_group_id=lb_group.id, description="Triton readiness checks",
            tags=tag("sg-triton"), region=spec.region, opts=opts)
    aws.vpc.SecurityGroupEgressRule(f"{name}-lb-sg-out", security_group_id=lb_group.id, ip_protocol="tcp",
                                    from_port=HTTP_PORT, to_port=METRICS_PORT - 1,
                                    referenced_security_group_id=node_group.id, description="to the Triton nodes",
                                    tags=tag("lb-sg"), region=spec.region, opts=opts)
    balancer = aws.lb.LoadBalancer(
        f"{name}-lb", load_balancer_type="network", internal=not lb_args.internet_facing,
        subnets=[public_subnet_id if lb_args.internet_facing else subnet_id], security_groups=[lb_group.id],
        enable_cross_zone_load_balancing=False, tags=tag("lb"), region=spec.region, opts=opts)
    groups = []
    for port in ports:
        group = aws.lb.TargetGroup(f"{name}-tg-{port}", target_group_args(spec, port, vpc_id, tag("tg")), opts=opts)
        tls = {"protocol": "TLS", "certificate_arn": lb_args.tls_certificate_arn, "ssl_policy": TLS_POLICY,
               "alpn_policy": ALPN[port]} if lb_args.internet_facing else {"protocol": "TCP"}
        aws.lb.Listener(f"{name}-listener-{port}", load_balancer_arn=balancer.arn, port=port, tags=tag("listener"),
                        default_actions=[{"type": "forward", "target_group_arn": group.arn}], region=spec.region, opts=opts, **tls)
        aws.autoscaling.Attachment(f"{name}-attach-{port}", autoscaling_group_name=fleet.name,
                                   lb_target_group_arn=group.arn, region=spec.region, opts=opts)
        groups.append(group)
    aws.iam.RolePolicy(f"{name}-role-models", role=node_role, opts=opts,
                       policy=json.dumps(model_read_policy(inference.model_repository), sort_keys=True))
    if published_metric(inference) is not None:
        aws.iam.RolePolicy(f"{name}-role-metrics", role=node_role, opts=opts,
                           policy=json.dumps(metric_publish_policy(), sort_keys=True))
    policy = scaling_policy_args(spec, fleet.name)
    if policy is not None:
        aws.autoscaling.Policy(f"{name}-scaling", autoscaling_group_name=fleet.name, region=spec.region, opts=opts,
                               **policy)
    return Serving(load_balancer=balancer, target_groups=groups)
