"""`gpufleet:index:AwsGpuCluster`: a multi-node GPU training cluster on AWS with EFA.

The component checks its args against the catalog and AWS's rules before it registers itself, so bad input
declares nothing (values that come from other resources are checked again once known, see `gpufleet.request`).
Children are named f"{name}-{role}" (roles: vpc, igw, subnet, nat-subnet, nat-ip, nat, routes, nat-routes, sg,
sg-*, pg, role, role-ssm, role-health, role-extra-{i}, profile, key, lt, nodes) and parented to the component.
They use the caller's provider (`opts.provider` / `opts.providers`) or the default one, which reads the stack's
`aws:*` config (profile, assumeRoles, allowedAccountIds, defaultTags); each regional resource names the spec's
region itself (pulumi-aws 7 `region` argument), so no provider of gpufleet's own is needed.
"""

# No `from __future__ import annotations` here: Pulumi's Analyzer reads the class annotations as real types.
from dataclasses import dataclass
from functools import partial
from typing import Optional

import pulumi
import pulumi_aws as aws

from gpufleet import cloud_init
from ..args import GpuClusterArgs
from ..boot import user_data_for
from ..catalog.selector import Selection, select
from ..component import GpuClusterOutputs
from ..monitoring.scrape import aws_jobs, scrape_config_text
from ..naming import cluster_hash
from ..outputs import common_outputs, exporter_jobs
from ..request import ClusterInputs, cluster_request, plan_or_refuse
from ..spec import ClusterSpec, SpecError
from .fleet import build_fleet
from .identity import build_instance_profile
from .launch_template import build_launch_template
from .network import build_network
from .outputs import access_outputs
from .placement import build_placement_group
from .rules import selection_problems
from .security import build_security_group
from .tagging import Tagger, tagger

TYPE_TOKEN = "gpufleet:index:AwsGpuCluster"
CLOUD = "aws"


@dataclass(frozen=True)
class AwsPlan:
    """Everything decided before any resource is declared."""

    selection: Selection
    user_data: str


def plan_aws(name: str, spec: ClusterSpec) -> AwsPlan:
    """The one checking call: catalog selection, AWS rules, user data; raises `SpecError` with every problem."""
    selection = select(spec)
    problems = selection_problems(selection)
    if problems:
        raise SpecError(problems)
    return AwsPlan(selection, cloud_init.encode_user_data(user_data_for(selection, name), "aws"))


class AwsGpuCluster(GpuClusterOutputs):
    """GPU nodes in one AZ behind a NAT, in a cluster placement group, with EFA on every EFA-capable card."""

    vpc_id: pulumi.Output[str]
    """The nodes' VPC (the existing subnet's, or the one gpufleet created)."""
    subnet_id: pulumi.Output[str]
    """The nodes' private subnet."""
    security_group_id: pulumi.Output[str]
    """The nodes' security group."""
    placement_group: pulumi.Output[Optional[str]]
    """The cluster placement group's name, when the nodes use one."""
    launch_template_id: pulumi.Output[str]
    """The nodes' launch template."""
    fleet_name: pulumi.Output[str]
    """The nodes' Auto Scaling group."""
    node_role_arn: pulumi.Output[str]
    """The nodes' IAM role (attach more policies with `extra_node_policy_arns`)."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        request = cluster_request(args, CLOUD)  # raises ClusterRefused before anything is declared
        pipeline = partial(plan_aws, name)  # the one checking pipeline: selection, rules, user data
        plan = plan_or_refuse(pipeline, request.spec)
        inputs = request.inputs(pipeline)  # Outputs go through the same pipeline once known
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.selection = plan.selection
        self.publish(self._build(name, plan, inputs))

    def _build(self, name: str, plan: AwsPlan, inputs: ClusterInputs) -> dict:
        """Declares the children. New resource files (storage, monitoring, inference) hook in here."""
        selection = plan.selection
        spec = selection.spec
        tag = tagger(pulumi.get_stack(), name, inputs.tags, cluster_hash(name))
        child = pulumi.ResourceOptions(parent=self)
        self.network = build_network(name, spec, inputs.existing_subnet_id, tag, child)
        self.security_group = build_security_group(name, spec, self.network.vpc_id, tag, child)
        self.placement = build_placement_group(name, selection, tag, child)
        self.identity = build_instance_profile(name, cluster_hash(name), tag, child, inputs.extra_node_policy_arns)
        key_name = _key_pair(name, spec, inputs.ssh_public_key, tag, child)
        self.launch_template = build_launch_template(name, selection, self.security_group.id, self.identity.profile,
                                                     plan.user_data, key_name, tag, child, inputs.image_id)
        self.fleet = build_fleet(name, selection, self.launch_template, self.network.subnet_id, self.placement, tag,
                                 child)
        return {
            **common_outputs(selection),
            "vpc_id": self.network.vpc_id,
            "subnet_id": self.network.subnet_id,
            "security_group_id": self.security_group.id,
            "placement_group": self.placement.name if self.placement else None,
            "launch_template_id": self.launch_template.id,
            "fleet_name": self.fleet.name,
            "node_role_arn": self.identity.role.arn,
            **access_outputs(spec.region, self.fleet.name, selection.instance.gpus),
            "prometheus_scrape_config": scrape_config_text(
                aws_jobs(pulumi.get_stack(), spec.region, exporter_jobs(spec))),
        }


def _key_pair(name: str, spec: ClusterSpec, public_key: Optional[pulumi.Input[str]], tag: Tagger,
              opts: pulumi.ResourceOptions) -> Optional[pulumi.Output[str]]:
    if public_key is None:
        return None
    return aws.ec2.KeyPair(f"{name}-key", public_key=public_key, tags=tag("key"), region=spec.region,
                           opts=opts).key_name
