"""The Slurm controller on AWS (`gpufleet:index:SlurmController`): one small instance in the nodes' private subnet,
no public IP, reached with SSM Session Manager like the monitoring server.

- address: its own network interface, so the private address the nodes know survives a replaced instance;
- state: a separate encrypted gp3 volume for StateSaveLocation, kept when the instance is replaced;
- munge key: an SSM SecureString written once (gpufleet.scheduler.key), readable by the controller's role and the
  nodes' role only;
- network: the controller's group admits slurmctld (6817) and srun's range from the nodes' group only; the nodes'
  group admits slurmd (6818) and srun's range from the controller's group only.
The nodes learn the controller's address and the key's name from their instance tags (IMDS), so their user data
names neither. Children are named f"{name}-slurm-{role}" (roles: sg, sg-egress, sg-<port>, key, role, role-access,
profile, nic, state, state-attach, controller) and f"{name}-sg-slurm-<port>", f"{name}-role-slurm-key".
"""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from gpufleet.cloud_init import encode_user_data
from gpufleet.cloud_init.power.config import PowerConfig
from gpufleet.cloud_init.slurm_controller import ControllerConfig, render_controller_cloud_config

from ..groups.plans import NodeGroupPlans
from ..scheduler.conf import (
    SLURM_PORTS,
    SLURMCTLD_PORT,
    SLURMD_PORT,
    SRUN_PORT_RANGE,
    controller_files,
    controller_settings,
)
from ..scheduler.elastic import elastic_settings
from ..scheduler.key import keep_first_value, munge_key
from .identity import EC2_TRUST
from .monitoring_server import SESSION_MANAGER_ACTIONS, UBUNTU_AMI_PARAMETER, data_device_path
from .tagging import Tagger

TYPE_TOKEN = "gpufleet:index:SlurmController"
DEFAULT_INSTANCE_TYPE = "m7i.large"
STATE_DEVICE_NAME = "/dev/sdf"
ROOT_DISK_GIB = 30
CONTROLLER_TAG = "gpufleet-slurm-controller"
KEY_TAG = "gpufleet-slurm-key"


def key_parameter_name(stack: str, name: str) -> str:
    return f"/gpufleet/{stack}/{name}/slurm/munge-key"


def read_key_policy(parameter_arn: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "SlurmMungeKey", "Effect": "Allow", "Action": ["ssm:GetParameter"], "Resource": [parameter_arn]}]},
        sort_keys=True)


def controller_policy(parameter_arn: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "SessionManager", "Effect": "Allow", "Action": SESSION_MANAGER_ACTIONS, "Resource": "*"},
        {"Sid": "SlurmMungeKey", "Effect": "Allow", "Action": ["ssm:GetParameter"], "Resource": [parameter_arn]}]},
        sort_keys=True)


class SlurmController(pulumi.ComponentResource):
    """slurmctld for one cluster; `node_tags` go on the nodes' instances, `outputs` into the cluster's."""

    def __init__(self, name: str, plans: NodeGroupPlans, vpc_id: pulumi.Input[str], subnet_id: pulumi.Input[str],
                 node_group_id: pulumi.Input[str], node_role_name: pulumi.Input[str], tag: Tagger,
                 opts: pulumi.ResourceOptions, metrics: bool = False):
        super().__init__(TYPE_TOKEN, f"{name}-slurm", None, opts)
        spec, stack, role = plans.first.spec, pulumi.get_stack(), f"{name}-slurm"
        child = pulumi.ResourceOptions(parent=self)
        region = spec.region
        group = aws.ec2.SecurityGroup(f"{role}-sg", vpc_id=vpc_id, tags=tag("slurm-sg"), region=region, opts=child,
                                      description="gpufleet Slurm controller: slurmctld and srun from the nodes only")
        aws.vpc.SecurityGroupEgressRule(f"{role}-sg-egress", security_group_id=group.id, ip_protocol="-1",
                                        cidr_ipv4="0.0.0.0/0", description="slurmd, AWS APIs and apt through the NAT",
                                        tags=tag("slurm-sg-egress"), region=region, opts=child)
        for low, high in (SLURM_PORTS[0], SRUN_PORT_RANGE):
            aws.vpc.SecurityGroupIngressRule(f"{role}-sg-{low}", security_group_id=group.id, ip_protocol="tcp",
                                             from_port=low, to_port=high, referenced_security_group_id=node_group_id,
                                             description="slurmctld and srun from the cluster's nodes",
                                             tags=tag(f"slurm-sg-{low}"), region=region, opts=child)
        for low, high in ((SLURMD_PORT, SLURMD_PORT), SRUN_PORT_RANGE):
            aws.vpc.SecurityGroupIngressRule(f"{name}-sg-slurm-{low}", security_group_id=node_group_id,
                                             ip_protocol="tcp", from_port=low, to_port=high,
                                             referenced_security_group_id=group.id,
                                             description="slurmd and srun from the gpufleet Slurm controller",
                                             tags=tag(f"sg-slurm-{low}"), region=region, opts=child)
        key = aws.ssm.Parameter(f"{role}-key", name=key_parameter_name(stack, name), type="SecureString",
                                value=munge_key(), description="gpufleet Slurm: the cluster's munge key",
                                tags=tag("slurm-key"), region=region, opts=keep_first_value("aws", child))
        aws.iam.RolePolicy(f"{name}-role-slurm-key", role=node_role_name, policy=key.arn.apply(read_key_policy),
                           opts=child)
        iam_role = aws.iam.Role(f"{role}-role", assume_role_policy=json.dumps(EC2_TRUST, sort_keys=True),
                                description="gpufleet Slurm controller: its munge key, SSM sessions",
                                tags=tag("slurm-role"), opts=child)
        aws.iam.RolePolicy(f"{role}-role-access", role=iam_role.id, policy=key.arn.apply(controller_policy),
                           opts=child)
        profile = aws.iam.InstanceProfile(f"{role}-profile", role=iam_role.name, tags=tag("slurm-profile"),
                                          opts=child)
        nic = aws.ec2.NetworkInterface(f"{role}-nic", subnet_id=subnet_id, security_groups=[group.id],
                                       description="gpufleet Slurm controller: the address the nodes know",
                                       tags=tag("slurm-nic"), region=region, opts=child)
        zone = aws.ec2.get_subnet_output(id=subnet_id, region=region,
                                         opts=pulumi.InvokeOutputOptions(parent=self)).availability_zone
        state = aws.ebs.Volume(f"{role}-state", availability_zone=zone, size=spec.scheduler.slurm.state_disk_gib,
                               type="gp3", encrypted=True, tags=tag("slurm-state"), region=region, opts=child)
        self._role, self._plans, self._name, self._metrics, self._tag = role, plans, name, metrics, tag
        self._nic, self._state, self._key, self._profile = nic, state, key, profile
        self.zone = zone
        self.role_name = iam_role.name
        self.address = nic.private_ip
        self.group_id = group.id
        self.node_tags = {CONTROLLER_TAG: nic.private_ip, KEY_TAG: key.name}

    def start(self, power: pulumi.Input[PowerConfig] | None = None,
              depends_on: list[pulumi.Resource] | None = None) -> None:
        """Declares the controller instance, once the node groups are declared: an elastic cluster's user data names
        the groups' launch templates (`power`), which name the controller's interface address, never the instance."""
        spec, role, region, tag = self._plans.first.spec, self._role, self._plans.first.spec.region, self._tag
        plans, name, metrics, nic, state, key = self._plans, self._name, self._metrics, self._nic, self._state, self._key
        child = pulumi.ResourceOptions(parent=self)
        ami = aws.ssm.get_parameter_output(name=UBUNTU_AMI_PARAMETER, region=region,
                                           opts=pulumi.InvokeOutputOptions(parent=self))
        user_data = pulumi.Output.all(nic.private_ip, state.id, key.name, power).apply(
            lambda values: encode_user_data(controller_user_data(plans, name, values[0], values[1], values[2], metrics,
                                                                 values[3]), "aws"))
        server = aws.ec2.Instance(
            f"{role}-controller", ami=ami.value,
            instance_type=spec.scheduler.slurm.controller_instance_type or DEFAULT_INSTANCE_TYPE,
            network_interfaces=[aws.ec2.InstanceNetworkInterfaceArgs(device_index=0, network_interface_id=nic.id)],
            iam_instance_profile=self._profile.name, user_data_base64=user_data, user_data_replace_on_change=True,
            metadata_options=aws.ec2.InstanceMetadataOptionsArgs(http_tokens="required", http_endpoint="enabled",
                                                                 http_put_response_hop_limit=1),
            root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(volume_size=ROOT_DISK_GIB, volume_type="gp3",
                                                                  encrypted=True),
            tags=tag("slurm-controller"), volume_tags=tag("slurm-controller-root"), region=region,
            # The interface is its own resource: the old instance must release it before a new one takes it.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(
                ignore_changes=["ami"], delete_before_replace=True, depends_on=[key, *(depends_on or [])])))
        aws.ec2.VolumeAttachment(f"{role}-state-attach", device_name=STATE_DEVICE_NAME, volume_id=state.id,
                                 instance_id=server.id, stop_instance_before_detaching=True, region=region,
                                 opts=child)
        self.outputs = {
            "slurm_controller_address": nic.private_ip,
            "slurm_shell": pulumi.Output.concat("aws ssm start-session --region ", region, " --target ", server.id,
                                                "  # then: sinfo; squeue; sbatch examples/jobs/nccl-allreduce.sbatch"),
        }
        self.register_outputs({"address": self.address, "instance_id": server.id})


def controller_user_data(plans: NodeGroupPlans, name: str, address: str, volume_id: str, key_name: str,
                         metrics: bool = False, power: PowerConfig | None = None) -> str:
    """`power`: the elastic groups' power config (None without elastic groups: the user data is unchanged)."""
    settings = elastic_settings(plans, name, address) if power else controller_settings(plans, name, address)
    return render_controller_cloud_config(ControllerConfig(
        cloud="aws", hostname=settings.controller_host, files=tuple(controller_files(settings).items()),
        munge_key_name=key_name, state_device=data_device_path(volume_id), region=plans.first.spec.region,
        metrics=metrics, power=power))


__all__ = ["SLURMCTLD_PORT", "SlurmController"]
