"""AWS: EC2 Fleet `CreateFleet` with `Type=instant`, one call per target, through boto3 (Ubuntu's python3-boto3,
installed by the controller's setup) with the controller's instance profile.

- Launch: the group's launch template with one override (instance type, subnet, zone, and the placement group),
  `TotalTargetCapacity` = the nodes still without an instance, the market as `DefaultTargetCapacityType`, and the
  cluster's tag on the fleet and the instances in the request (the IAM policy's `aws:RequestTag` condition). An
  instant fleet answers at once with the instances it started (`Instances[].InstanceIds`) and, for what it could not
  start, `Errors[]` entries with `ErrorCode` and `ErrorMessage` per launch template override (EC2 API reference,
  CreateFleet; aws-parallelcluster-node `src/slurm_plugin/fleet_manager.py` reads the same fields). It needs no
  service-linked role (EC2 User Guide, "EC2 Fleet prerequisites": "An instant EC2 Fleet does not require this
  role"). One target a call, rather than every override in one call with the `prioritized` strategy, because the
  spot strategies do not follow the order, and each target's own error is kept for the reason.
- Naming: each started instance is tagged `gpufleet-slurm-node=<node>` (CreateTags); the node reads the tag through
  IMDS (instance metadata tags are on in the launch template whenever Slurm is) and starts slurmd as that node. An
  instance whose tag cannot be written is terminated at once.
- Finding and releasing: DescribeInstances filtered on the cluster's tag and the node-name tag, not terminated;
  TerminateInstances by those ids.

Error codes, as EC2 gives them in `Errors[].ErrorCode` or a call's own error:
- capacity: InsufficientInstanceCapacity, InsufficientHostCapacity, InsufficientReservedInstanceCapacity,
  InsufficientCapacity, UnfulfillableCapacity, Unsupported (the type is not offered in the zone), SpotMaxPriceTooLow
  (aws-parallelcluster-node `src/slurm_plugin/slurm_resources.py` EC2_ICE_ERROR_CODES);
- quota: VcpuLimitExceeded (ParallelCluster's `vcpu-limit-failures`, `cluster_event_publisher.py`),
  InstanceLimitExceeded, MaxSpotInstanceCountExceeded;
- anything else: error (UnauthorizedOperation, InvalidLaunchTemplateId.NotFound, ...).
"""

from __future__ import annotations

import logging
from typing import Any

from .config import CLUSTER_KEY, NODE_NAME_KEY, PowerConfig, PowerGroup
from .engine import Attempt, CloudError, Instance

log = logging.getLogger("gpufleet-power")
CAPACITY_CODES = frozenset({"InsufficientInstanceCapacity", "InsufficientHostCapacity", "InsufficientCapacity",
                            "InsufficientReservedInstanceCapacity", "UnfulfillableCapacity", "Unsupported",
                            "SpotMaxPriceTooLow"})
QUOTA_CODES = frozenset({"VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotInstanceCountExceeded"})
LIVE_STATES = ["pending", "running", "stopping", "stopped"]
GROUP_TAG = "gpufleet-slurm-group"


def kind_of(code: str) -> str:
    return "capacity" if code in CAPACITY_CODES else "quota" if code in QUOTA_CODES else "error"


class AwsProvider:
    def __init__(self, config: PowerConfig, client: Any = None):
        assert config.aws is not None
        self.config = config
        if client is None:
            import boto3  # Ubuntu's python3-boto3 on the controller; imported only by AWS clusters

            client = boto3.client("ec2", region_name=config.aws.region, endpoint_url=config.aws.endpoint_url or None)
        self.ec2 = client

    def targets(self, group: PowerGroup) -> int:
        assert group.aws is not None
        return len(group.aws.targets)

    def launch(self, group: PowerGroup, target: int, names: list[str]) -> Attempt:
        from botocore.exceptions import ClientError

        assert group.aws is not None
        spec = group.aws.targets[target]
        label = f"{spec.instance_type} {spec.availability_zone}"
        override: dict = {"InstanceType": spec.instance_type, "SubnetId": spec.subnet_id,
                          "AvailabilityZone": spec.availability_zone}
        if group.aws.placement_group:
            override["Placement"] = {"GroupName": group.aws.placement_group}
        tags = [{"Key": CLUSTER_KEY, "Value": self.config.cluster_id}, {"Key": GROUP_TAG, "Value": group.name}]
        try:
            answer = self.ec2.create_fleet(
                Type="instant",
                LaunchTemplateConfigs=[{"LaunchTemplateSpecification": {
                    "LaunchTemplateId": spec.launch_template_id or group.aws.launch_template_id,
                    "Version": group.aws.launch_template_version}, "Overrides": [override]}],
                TargetCapacitySpecification={"TotalTargetCapacity": len(names),
                                             "DefaultTargetCapacityType": group.aws.market},
                TagSpecifications=[{"ResourceType": kind, "Tags": tags} for kind in ("fleet", "instance")])
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "ClientError")
            message = error.response.get("Error", {}).get("Message", str(error))
            return Attempt(error=CloudError(kind_of(code), code, message, label))
        ids = [instance_id for item in answer.get("Instances", []) for instance_id in item.get("InstanceIds", [])]
        created = self._name(names, ids)
        shortfall = None
        if len(created) < len(names):
            errors = answer.get("Errors") or [{"ErrorCode": "UnfulfillableCapacity",
                                               "ErrorMessage": "EC2 Fleet started fewer instances than asked"}]
            code, message = errors[0].get("ErrorCode", "Unknown"), errors[0].get("ErrorMessage", "")
            shortfall = CloudError(kind_of(code), code, message, label)
        return Attempt(created=created, error=shortfall)

    def _name(self, names: list[str], ids: list[str]) -> dict[str, str]:
        """Tag each new instance with its node's name; one that cannot be named is terminated, never left."""
        from botocore.exceptions import ClientError

        created: dict[str, str] = {}
        surplus = ids[len(names):]
        for node, instance_id in zip(names, ids, strict=False):
            try:
                self.ec2.create_tags(Resources=[instance_id], Tags=[{"Key": NODE_NAME_KEY, "Value": node}])
                created[node] = instance_id
            except ClientError as error:
                log.error("cannot tag %s as %s (%s); terminating it", instance_id, node, error)
                surplus.append(instance_id)
        if surplus:
            self.ec2.terminate_instances(InstanceIds=surplus)
        return created

    def find(self, group: PowerGroup, names: list[str]) -> list[Instance]:
        if not names:
            return []
        found = []
        pages = self.ec2.get_paginator("describe_instances").paginate(Filters=[
            {"Name": f"tag:{CLUSTER_KEY}", "Values": [self.config.cluster_id]},
            {"Name": f"tag:{NODE_NAME_KEY}", "Values": names},
            {"Name": "instance-state-name", "Values": LIVE_STATES}])
        for page in pages:
            for reservation in page.get("Reservations", []):
                for item in reservation.get("Instances", []):
                    tags = {tag["Key"]: tag["Value"] for tag in item.get("Tags", [])}
                    if tags.get(NODE_NAME_KEY) in names and tags.get(CLUSTER_KEY) == self.config.cluster_id:
                        found.append(Instance(id=item["InstanceId"], node=tags[NODE_NAME_KEY],
                                              live=item.get("State", {}).get("Name") in ("pending", "running")))
        return sorted(found, key=lambda instance: (instance.node, instance.id))

    def terminate(self, group: PowerGroup, instances: list[Instance]) -> None:
        self.ec2.terminate_instances(InstanceIds=[instance.id for instance in instances])
