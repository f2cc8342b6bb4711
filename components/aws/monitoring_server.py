"""The monitoring server on AWS: one small instance in the nodes' private subnet, no public IP, reached with SSM.

- identity: an instance profile whose role may call `ec2:DescribeInstances` (EC2 service discovery; Describe calls
  take no resource-level scoping), read only this server's own SSM parameters, and run Session Manager
  (`ssmmessages:*Channel`, `ssm:UpdateInstanceInformation`), nothing else. Not AmazonSSMManagedInstanceCore: it
  grants `ssm:GetParameter` on every parameter in the account.
- secrets: each Pulumi secret becomes an SSM Parameter Store SecureString (the account's aws/ssm key, whose key
  policy admits SSM calls from the account), read at boot by the setup script.
- disk: a separate encrypted gp3 volume for Prometheus' TSDB, so replacing the instance keeps the metrics.
- network: a security group with no ingress at all (SSM port forwarding needs none); the nodes' security group
  admits this group, and only this group, on the exporter ports.
Children are named f"{name}-monitoring-{role}" (roles: sg, sg-egress, role, role-access, profile, data,
data-attach, secret-<secret role>, server) and f"{name}-sg-monitoring-<port>" on the nodes' group.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from gpufleet import cloud_init

from ..groups.plans import NodeGroupPlans
from ..monitoring.outputs import monitoring_outputs, stack_dashboards
from ..monitoring.scrape import SLURM_JOB, aws_jobs, slurm_controller_job
from ..monitoring.secrets import MonitoringPlan, plan_monitoring
from ..monitoring.server.cloud_config import ServerSettings, server_user_data
from ..outputs import exporter_jobs
from .identity import EC2_TRUST
from .tagging import Tagger

DEFAULT_INSTANCE_TYPE = "t3.medium"
UBUNTU_AMI_PARAMETER = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
DATA_DEVICE_NAME = "/dev/sdf"
ROOT_DISK_GIB = 20
__all__ = ["build_monitoring_server", "plan_monitoring"]
SESSION_MANAGER_ACTIONS = ["ssm:UpdateInstanceInformation", "ssmmessages:CreateControlChannel",
                           "ssmmessages:CreateDataChannel", "ssmmessages:OpenControlChannel",
                           "ssmmessages:OpenDataChannel"]


def parameter_name(stack: str, name: str, role: str) -> str:
    return f"/gpufleet/{stack}/{name}/monitoring/{role}"


def access_policy(parameter_arns: list[str]) -> str:
    """The server role's only permissions: discovery, its own parameters, Session Manager."""
    statements = [
        {"Sid": "Ec2ServiceDiscovery", "Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"},
        {"Sid": "SessionManager", "Effect": "Allow", "Action": SESSION_MANAGER_ACTIONS, "Resource": "*"},
    ]
    if parameter_arns:
        statements.append({"Sid": "OwnSecrets", "Effect": "Allow", "Action": ["ssm:GetParameter"],
                           "Resource": sorted(parameter_arns)})
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def data_device_path(volume_id: str) -> str:
    """Nitro instances show EBS volumes as NVMe devices whose by-id link carries the volume id without the dash."""
    return f"/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_{volume_id.replace('-', '')}"


def build_monitoring_server(name: str, plans: NodeGroupPlans, monitoring: MonitoringPlan, vpc_id: pulumi.Input[str],
                            subnet_id: pulumi.Input[str], node_group_id: pulumi.Input[str], tag: Tagger,
                            opts: pulumi.ResourceOptions,
                            slurm: tuple[pulumi.Input[str], pulumi.Input[str]] | None = None) -> dict[str, Any]:
    """The server and its outputs when `monitoring.server` is on; the dashboards and rules outputs always.
    `slurm`: the Slurm controller's (security group id, address), whose node_exporter only this server may reach."""
    outputs = monitoring_outputs(plans)
    if not monitoring.enabled:
        return outputs
    spec, stack = plans.first.spec, pulumi.get_stack()
    role = f"{name}-monitoring"
    group = aws.ec2.SecurityGroup(f"{role}-sg", vpc_id=vpc_id, tags=tag("monitoring-sg"), region=spec.region, opts=opts,
                                  description="gpufleet monitoring server: no ingress (SSM), egress out")
    aws.vpc.SecurityGroupEgressRule(f"{role}-sg-egress", security_group_id=group.id, ip_protocol="-1",
                                    cidr_ipv4="0.0.0.0/0", description="scrapes, AWS APIs and apt through the NAT",
                                    tags=tag("monitoring-sg-egress"), region=spec.region, opts=opts)
    for _job, port in exporter_jobs(spec):
        aws.vpc.SecurityGroupIngressRule(f"{name}-sg-monitoring-{port}", security_group_id=node_group_id,
                                         ip_protocol="tcp", from_port=port, to_port=port,
                                         referenced_security_group_id=group.id,
                                         description="exporter scrape from the gpufleet monitoring server",
                                         tags=tag(f"sg-monitoring-{port}"), region=spec.region, opts=opts)
    if slurm:
        port = SLURM_JOB[1]
        aws.vpc.SecurityGroupIngressRule(f"{name}-slurm-sg-monitoring-{port}", security_group_id=slurm[0],
                                         ip_protocol="tcp", from_port=port, to_port=port,
                                         referenced_security_group_id=group.id,
                                         description="Slurm metrics scrape from the gpufleet monitoring server",
                                         tags=tag(f"slurm-sg-monitoring-{port}"), region=spec.region, opts=opts)
    parameters = {
        secret_role: aws.ssm.Parameter(f"{role}-secret-{secret_role}", name=parameter_name(stack, name, secret_role),
                                       type="SecureString", value=value, tags=tag(f"monitoring-secret-{secret_role}"),
                                       description=f"gpufleet monitoring server: {secret_role}", region=spec.region, opts=opts)
        for secret_role, value in sorted(monitoring.secrets.items())}
    iam_role = aws.iam.Role(f"{role}-role", assume_role_policy=json.dumps(EC2_TRUST, sort_keys=True),
                            description="gpufleet monitoring server: EC2 discovery, own parameters, SSM sessions",
                            tags=tag("monitoring-role"), opts=opts)
    aws.iam.RolePolicy(f"{role}-role-access", role=iam_role.id, opts=opts,
                       policy=pulumi.Output.all(*[p.arn for p in parameters.values()]).apply(
                           lambda arns: access_policy(list(arns))))
    profile = aws.iam.InstanceProfile(f"{role}-profile", role=iam_role.name, tags=tag("monitoring-profile"), opts=opts)
    zone = aws.ec2.get_subnet_output(id=subnet_id, region=spec.region, opts=pulumi.InvokeOutputOptions(parent=opts.parent)).availability_zone
    data = aws.ebs.Volume(f"{role}-data", availability_zone=zone, size=spec.monitoring.data_disk_gib, type="gp3",
                          encrypted=True, tags=tag("monitoring-data"), region=spec.region, opts=opts)
    ami = aws.ssm.get_parameter_output(name=UBUNTU_AMI_PARAMETER, region=spec.region, opts=pulumi.InvokeOutputOptions(parent=opts.parent))
    refs = {secret_role: parameter_name(stack, name, secret_role) for secret_role in monitoring.secrets}
    jobs = aws_jobs(stack, spec.region, exporter_jobs(spec), grouped=plans.grouped)
    elastic = any(plan.spec.nodes_range is not None for plan in plans.groups)  # the power metrics and their alerts
    user_data = pulumi.Output.all(data.id, slurm[1] if slurm else "").apply(
        lambda values: cloud_init.encode_user_data(server_user_data(
        spec.monitoring, jobs + ([slurm_controller_job(values[1], elastic)] if slurm else []), stack_dashboards(plans),
        ServerSettings("aws", data_device_path(values[0]), refs, {"AWS_REGION": spec.region})), "aws"))
    server = aws.ec2.Instance(
        f"{role}-server", ami=ami.value, instance_type=spec.monitoring.instance_type or DEFAULT_INSTANCE_TYPE,
        subnet_id=subnet_id, associate_public_ip_address=False, vpc_security_group_ids=[group.id],
        iam_instance_profile=profile.name, user_data_base64=user_data, user_data_replace_on_change=True,
        metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_tokens="required", http_endpoint="enabled",
                                                             http_put_response_hop_limit=1),
        root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(volume_size=ROOT_DISK_GIB, volume_type="gp3",
                                                              encrypted=True),
        tags=tag("monitoring"), volume_tags=tag("monitoring-root"),
        # A new Ubuntu AMI must not replace a running server; the data volume survives a replacement anyway.
        region=spec.region, opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["ami"],
                                                                       depends_on=list(parameters.values()))))
    aws.ec2.VolumeAttachment(f"{role}-data-attach", device_name=DATA_DEVICE_NAME, volume_id=data.id,
                             instance_id=server.id, stop_instance_before_detaching=True, region=spec.region, opts=opts)
    return {
        **outputs,
        "monitoring_server_id": server.id,
        "monitoring_server_ip": server.private_ip,
        "grafana_port_forward": pulumi.Output.concat(
            "aws ssm start-session --region ", spec.region, " --target ", server.id,
            " --document-name AWS-StartPortForwardingSession",
            ' --parameters \'{"portNumber":["3000"],"localPortNumber":["3000"]}\'  # then open http://localhost:3000'),
    }
