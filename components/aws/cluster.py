"""`gpufleet:index:AwsGpuCluster`: a multi-node GPU training cluster on AWS with EFA.

The component checks its args against the catalog and AWS's rules before it registers itself, so bad input
declares nothing (values that come from other resources are checked again once known, see `gpufleet.request`).
Children are named f"{name}-{role}" (roles: vpc, igw, subnet, nat-subnet, nat-ip, nat, routes, nat-routes, sg,
sg-*, pg, role, role-ssm, role-health, role-policy-*, role-buckets-read, role-node-config, profile, key, fs-sg,
fs-sg-*, fsx, fsx-s3, efs, efs-mount, node-config and node-config-* (only when the user data exceeds 16 KB), lt,
nodes, ssm-transfer and ssm-transfer-*, and the serving and monitoring server children) and parented to the component.
With `node_groups`, each group's lt, nodes, drain-hook and node-config children are f"{name}-{group}-{role}"
(`node_group.py`); everything else is the cluster's, once.
They use the caller's provider (`opts.provider` / `opts.providers`) or the default one, which reads the stack's
`aws:*` config (profile, assumeRoles, allowedAccountIds, defaultTags); each regional resource names the spec's
region itself (pulumi-aws 7 `region` argument), so no provider of gpufleet's own is needed.
"""

# No `from __future__ import annotations` here: Pulumi's Analyzer reads the class annotations as real types.
from dataclasses import dataclass, field
from functools import partial
from typing import Optional

import pulumi
import pulumi_aws as aws

from ..args import GpuClusterArgs
from ..component import GpuClusterOutputs
from ..deploytime.containers import registry_digest
from ..groups.outputs import group_outputs
from ..groups.plans import NodeGroupPlans
from ..monitoring.scrape import aws_jobs, scrape_config_text
from ..monitoring.secrets import MonitoringPlan
from ..naming import cluster_hash
from ..outputs import common_outputs, exporter_jobs
from ..pipeline import ClusterPlan, fallback_type_plans, plan_node_groups, undeclared_elastic_problems
from ..request import ClusterInputs, cluster_request, plan_or_refuse
from ..serving import serving_outputs
from ..spec import ClusterSpec
from ..spec.errors import raise_if
from .elastic import ElasticTemplate, elastic_aws_problems, grant_power_permissions, power_config, power_group_name
from .elastic import fallback_zones as elastic_fallback_zones
from .identity import build_instance_profile, grid_driver_location
from .monitoring_server import build_monitoring_server, plan_monitoring
from .network import build_network
from .node_group import AwsNodeGroup, ClusterShared, build_node_group
from .outputs import access_outputs, elastic_access_outputs
from .permissions import grant_node_permissions
from .placement import build_placement_group
from .security import build_security_group
from .serving import build_serving
from .slurm_controller import SlurmController
from .ssm_transfer import build_ssm_transfer_bucket
from .storage import build_shared_storage
from .tagging import Tagger, tagger

TYPE_TOKEN = "gpufleet:index:AwsGpuCluster"
CLOUD = "aws"


@dataclass(frozen=True)
class AwsPlan:
    """Everything decided before any resource is declared: each node group's checked plan (its selection and user
    data, rendered before a shared filesystem's address is put in) and the monitoring secrets."""

    groups: NodeGroupPlans
    monitoring: MonitoringPlan
    fallbacks: dict[Optional[str], tuple[ClusterPlan, ...]] = field(default_factory=dict)
    """Each elastic group's fallback types' plans, by group (`pipeline.fallback_type_plans`)."""


def plan_aws(name: str, spec: ClusterSpec) -> AwsPlan:
    """The one checking pipeline (`gpufleet.pipeline.plan_node_groups`: selection, AWS rules, user data size, per
    group) plus the monitoring secrets; raises `SpecError` with every problem."""
    groups = plan_node_groups(spec, name=name, pin=registry_digest)
    raise_if([*undeclared_elastic_problems(groups), *elastic_aws_problems(groups.groups)])
    fallbacks = {plan.group: fallback_type_plans(plan, pin=registry_digest) for plan in groups.groups if plan.fallbacks}
    return AwsPlan(groups, plan_monitoring(groups), fallbacks)


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
    """The nodes' IAM role (attach more policies with `access.iam_policy_arns`)."""
    node_instance_profile_arn: pulumi.Output[str]
    """The nodes' instance profile."""
    node_extra_policy_arns: pulumi.Output[list[str]]
    """The managed policies attached to the node role beyond gpufleet's own (`access:`)."""
    shared_filesystem_id: pulumi.Output[Optional[str]]
    """The shared filesystem's id (FSx for Lustre or EFS), when `storage.shared` is set."""
    shared_filesystem_source: pulumi.Output[Optional[str]]
    """What the nodes mount (`dns@tcp:/mount` or `dns:/`), when `storage.shared` is set."""
    monitoring_server_id: pulumi.Output[Optional[str]]
    """The monitoring server's instance id (with `monitoring.server`)."""
    monitoring_server_ip: pulumi.Output[Optional[str]]
    """The monitoring server's private IP (with `monitoring.server`)."""
    ssm_transfer_bucket: pulumi.Output[str]
    """The private bucket Ansible's Session Manager connection transfers files through (`gpufleet inventory`)."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        request = cluster_request(args, CLOUD)  # raises ClusterRefused before anything is declared
        pipeline = partial(plan_aws, name)  # the one checking pipeline: selection, rules, user data, secrets
        plan = plan_or_refuse(pipeline, request.spec)
        inputs = request.inputs(pipeline)  # Outputs go through the same pipeline once known
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.plans = plan.groups
        self.selection = plan.groups.first
        self.publish(self._build(name, plan, inputs))

    def _build(self, name: str, plan: AwsPlan, inputs: ClusterInputs) -> dict:
        """Declares the children: network, security, identity and permissions, storage, the Slurm controller, each
        node group's fleet, serving, monitoring."""
        plans = plan.groups
        selection = plans.first  # the cluster's own fields (region, network, access, ...) are every group's
        spec = selection.spec
        tag = tagger(pulumi.get_stack(), name, inputs.tags, cluster_hash(name))
        child = pulumi.ResourceOptions(parent=self)
        self.network = build_network(name, spec, inputs.existing_subnet_id, tag, child,
                                     tuple(elastic_fallback_zones(plans.groups)))
        network = self.network
        self.security_group = build_security_group(name, spec, network.vpc_id, tag, child)
        self.placement = build_placement_group(name, plans.placed[0], tag, child) if plans.placed else None
        grid_driver = next(filter(None, map(grid_driver_location, plans.groups)), None)
        self.identity = build_instance_profile(name, cluster_hash(name), tag, child, grid_driver)
        extra_policies = grant_node_permissions(name, spec, self.identity.role.name, child, inputs.iam_policy_arns)
        self.shared_storage = build_shared_storage(name, spec, network.vpc_id, network.subnet_id,
                                                   self.security_group.id, network.vpc_cidr, tag, child)
        shared = self.shared_storage
        key_name = _key_pair(name, spec, inputs.ssh_public_key, tag, child)
        self.slurm = SlurmController(name, plans, network.vpc_id, network.subnet_id, self.security_group.id,
                                     self.identity.role.name, tag, child, metrics=plan.monitoring.enabled,
                                     ) if spec.scheduler.kind == "slurm" else None
        elastic = [group for group in plans.groups if group.spec.nodes_range is not None]
        if self.slurm and not elastic:
            self.slurm.start()  # declared where it always was: a fixed cluster's plan is unchanged
        cluster_shared = ClusterShared(
            subnet_id=network.subnet_id, security_group_id=self.security_group.id, identity=self.identity,
            placement=self.placement, cluster_id=cluster_hash(name), key_name=key_name, image_id=inputs.image_id,
            shared_source=shared.source if shared else None,
            instance_tags=self.slurm.node_tags if self.slurm else None)
        self.group_fleets: dict[Optional[str], AwsNodeGroup] = {
            group.group: build_node_group(name, group, cluster_shared, tag, child, plan.fallbacks.get(group.group, ()))
            for group in plans.groups}
        if self.slurm and elastic:
            self._start_elastic(name, spec.region, network.subnet_id, plan.monitoring.enabled, child)
        first = self.group_fleets[selection.group]
        self.launch_template, self.fleet = first.launch_template, first.fleet
        self.ssm_transfer = build_ssm_transfer_bucket(name, spec, cluster_hash(name), tag, child)
        self.serving = build_serving(name, spec, network.vpc_id, network.vpc_cidr, network.subnet_id,
                                     network.public_subnet_id, self.security_group, self.identity.role.name, self.fleet,
                                     tag, child) if spec.inference else None
        return {
            **common_outputs(plans),
            **group_outputs(plans, {group: fleet_outputs(spec.region, node_group, cluster_hash(name))
                                    for group, node_group in self.group_fleets.items()}),
            "vpc_id": network.vpc_id,
            "subnet_id": network.subnet_id,
            "security_group_id": self.security_group.id,
            "placement_group": self.placement.name if self.placement else None,
            "launch_template_id": self.launch_template.id,
            "fleet_name": self.fleet.name if self.fleet else None,
            "ssm_transfer_bucket": self.ssm_transfer.bucket,
            "node_role_arn": self.identity.role.arn,
            "node_instance_profile_arn": self.identity.profile.arn,
            "node_extra_policy_arns": extra_policies,
            "shared_filesystem_id": shared.id if shared else None,
            "shared_filesystem_source": shared.source if shared else None,
            **{key: value for key, value in fleet_outputs(spec.region, first, cluster_hash(name)).items()
               if key not in ("launch_template_id", "fleet_name")},
            "prometheus_scrape_config": scrape_config_text(
                aws_jobs(pulumi.get_stack(), spec.region, exporter_jobs(spec), grouped=plans.grouped)),
            **(serving_outputs(selection, self.serving.load_balancer.dns_name) if self.serving else {}),
            **(self.slurm.outputs if self.slurm else {}),
            **build_monitoring_server(name, plans, plan.monitoring, network.vpc_id, network.subnet_id,
                                      self.security_group.id, tag, child,
                                      (self.slurm.group_id, self.slurm.address) if self.slurm else None),
        }

    def _start_elastic(self, name: str, region: str, subnet_id: pulumi.Input[str], metrics: bool,
                       child: pulumi.ResourceOptions) -> None:
        """The controller of a cluster with elastic groups: its power config names each group's launch template,
        and its role may launch from those templates and terminate this cluster's instances only (`elastic.py`)."""
        assert self.slurm is not None
        elastic = [ElasticTemplate(fleet.plan, fleet.launch_template, fleet.fallback_templates)
                   for fleet in self.group_fleets.values() if fleet.fleet is None]
        unique = cluster_hash(name)
        grant = grant_power_permissions(name, region, unique, self.slurm.role_name, elastic, self.identity.role.arn,
                                        child)
        placement = self.placement.name if self.placement else ""
        zones = [zone for zone, _ in self.network.fallback_subnets]
        zone_subnets = [pulumi.Output.all(subnet.id, subnet.availability_zone)
                        for _, subnet in self.network.fallback_subnets]
        power = pulumi.Output.all(pulumi.Output.from_input(subnet_id), self.slurm.zone, placement,
                                  [[template.id for template in item.templates()] for item in elastic],
                                  zone_subnets).apply(
            lambda values: power_config(
                region, unique, [(item.plan, ids[0], [(typed.instance.name, template) for (typed, _), template
                                                      in zip(item.fallbacks, ids[1:], strict=True)])
                                 for item, ids in zip(elastic, values[3], strict=True)],
                values[0], values[1], values[2] or _existing_placement(elastic), metrics,
                {zone: (found[0], found[1] or zone) for zone, found in zip(zones, values[4], strict=True)}))
        self.slurm.start(power, [grant])


def _existing_placement(elastic: list[ElasticTemplate]) -> str:
    """`placement_group_name`: a placement group the user made, for the groups in the cluster's placement."""
    return next((item.plan.spec.placement_group_name for item in elastic
                 if item.plan.placement_group and item.plan.spec.placement_group_name), "") or ""


def fleet_outputs(region: str, node_group: AwsNodeGroup, cluster_id: str) -> dict:
    """A group's outputs: an elastic group has a launch template and no Auto Scaling group (its nodes are the
    instances tagged with the cluster's hash and a Slurm node name)."""
    if node_group.fleet is not None:
        return {"launch_template_id": node_group.launch_template.id, "fleet_name": node_group.fleet.name,
                **access_outputs(region, node_group.fleet.name, node_group.plan.instance.gpus)}
    return {"launch_template_id": node_group.launch_template.id, "fleet_name": None,
            **elastic_access_outputs(region, cluster_id, power_group_name(node_group.plan),
                                     node_group.plan.instance.gpus)}


def _key_pair(name: str, spec: ClusterSpec, public_key: Optional[pulumi.Input[str]], tag: Tagger,
              opts: pulumi.ResourceOptions) -> Optional[pulumi.Output[str]]:
    if public_key is None:
        return None
    return aws.ec2.KeyPair(f"{name}-key", public_key=public_key, tags=tag("key"), region=spec.region,
                           opts=opts).key_name
