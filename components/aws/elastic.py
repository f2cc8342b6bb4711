"""Elastic node groups on AWS: what Slurm's power programs need to launch and terminate the group's instances, and
nothing more.

- No Auto Scaling group, not even one at size 0: ResumeProgram launches each resume's instances from the group's
  launch template with an instant EC2 Fleet (`gpufleet.cloud_init.power.aws`), one target (instance type, subnet,
  zone) after another, and SuspendProgram terminates them by id. `min` nodes are kept up by Slurm itself
  (`SuspendExcNodes=<nodes>:<min>`) and started by the power programs' minute `sync`, so `pulumi up` never creates
  or deletes a node and never races the programs over one.
- Ordering without a cycle: the template names the controller's *network interface* address (an instance tag the
  node reads through IMDS), never the controller instance; the controller instance is declared after the templates
  (`SlurmController.start`) and its user data names each template by id. The same spec gives the same power config
  bytes, so the controller is not replaced between plans.
- Naming: Slurm node names are `<cluster>-<group>-<n>` (`scheduler.elastic.node_prefix`); the power programs tag
  each started instance `gpufleet-slurm-node=<name>` and the node runs as that CLOUD node (`slurm/node-name`).
- Fallback types: each gets its own launch template (`{group}-{type}-lt`), planned like the chosen type
  (`pipeline.fallback_type_plans`: its node config names its type, its GPUs and its EFA interfaces), and each
  target names its type's template. Fallback zones: each gets a private subnet (`network.py`, at most
  `FALLBACK_SUBNETS_MAX` across the cluster), routed through the cluster's NAT gateway; a resume tries every type in
  the group's zone, then every type in each fallback zone.
- The controller's role gets one inline policy (`power_policy`), each statement scoped by the conditions the EC2
  User Guide documents: launches only from the groups' templates (`ec2:LaunchTemplate`), new instances, volumes and
  interfaces only with the cluster's tag in the request (`aws:RequestTag/gpufleet-cluster`), tags on create only
  (`ec2:CreateAction`) plus the node-name tag on the cluster's own instances, termination only of instances tagged
  with the cluster's hash (`ec2:ResourceTag/gpufleet-cluster`), `iam:PassRole` on the node role only, to EC2 only;
  `ec2:Describe*` is read-only.
  CreateFleet itself is allowed on the fleet and what it launches with the cluster's tag in the request, on the
  groups' templates by ARN, and on what a launch uses (subnets, security groups, images, key pairs, placement
  groups), never on another template.
  UNVERIFIED (no AWS account here): that an instant fleet's launches are authorized as RunInstances with the
  caller's request tags and the `ec2:LaunchTemplate` key, as for a direct RunInstances call; which resource types
  CreateFleet's own authorization evaluates, and that it takes `aws:RequestTag` on them; and that
  `ec2:CreateAction` reads `CreateFleet` for tags an instant fleet writes. The EC2 User Guide's examples cover
  RunInstances (`ec2:LaunchTemplate`, `ec2:CreateAction`, `aws:RequestTag` on instances and volumes) only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from gpufleet.cloud_init.power.config import (
    CLUSTER_KEY,
    NODE_NAME_KEY,
    AwsApi,
    AwsGroup,
    AwsTarget,
    PowerConfig,
    PowerGroup,
)

from ..groups.plans import ClusterPlan
from ..scheduler.elastic import node_prefix
from ..spec.errors import Problem
from .network import FALLBACK_SUBNETS_MAX

METRICS_FILE = "/var/lib/prometheus/node-exporter/gpufleet-power.prom"
LAUNCHED = ("instance", "volume", "network-interface", "spot-instances-request")
"""What a launch creates, and tags: the resources `aws:RequestTag` is checked on (EC2 User Guide, "Example
policies to control access the Amazon EC2 API": launch with specific tags)."""
USED = ("subnet", "security-group", "key-pair", "placement-group")
"""What a launch uses and does not create: named without tag conditions (they carry no request tags)."""
CREATE_ACTIONS = ("RunInstances", "CreateFleet")
MARKETS = {"on-demand": "on-demand", "spot": "spot"}


def elastic_aws_problems(plans: Sequence[ClusterPlan]) -> list[Problem]:
    """What this release's AWS component cannot declare for an elastic group, at the field."""
    problems: list[Problem] = []
    for plan in plans:
        spec = plan.spec
        if spec.nodes_range is None:
            continue
        where = f"node_groups.{plan.group}." if plan.group else ""
        if spec.fallback_zones and spec.network.existing_subnet_id:
            problems.append(Problem(f"{where}fallback_zones", list(spec.fallback_zones),
                                    "each fallback zone needs a private subnet, which gpufleet cannot add to "
                                    "`network.existing_subnet_id`: use `network.existing_vpc_id`, or drop "
                                    "`fallback_zones`"))
        if spec.market.type not in MARKETS:
            problems.append(Problem(f"{where}market.type", spec.market.type,
                                    "an AWS elastic group launches each resume at one market: expected spot or "
                                    "on-demand"))
    zones = fallback_zones(plans)
    if len(zones) > FALLBACK_SUBNETS_MAX:
        problems.append(Problem("fallback_zones", zones, f"the cluster's network holds a private subnet for at most "
                                f"{FALLBACK_SUBNETS_MAX} fallback zones (a quarter of `network.cidr` each) across its "
                                f"elastic groups: list at most {FALLBACK_SUBNETS_MAX}"))
    return problems


def fallback_zones(plans: Sequence[ClusterPlan]) -> list[str]:
    """Every elastic group's fallback zones, in order, each once: a private subnet each."""
    return list(dict.fromkeys(zone for plan in plans if plan.spec.nodes_range is not None
                              for zone in plan.spec.fallback_zones))


def power_group_name(plan: ClusterPlan) -> str:
    """The power config's group name, which the programs tag each instance with (`gpufleet-slurm-group`)."""
    return plan.group or plan.spec.scheduler.slurm.partition


def power_group(plan: ClusterPlan, template_id: str, subnet_id: str, zone: str, placement_group: str,
                fallback_templates: Sequence[tuple[str, str]] = (),
                zone_subnets: dict[str, tuple[str, str]] | None = None) -> PowerGroup:
    """`fallback_templates`: (instance type, launch template id) of each fallback type, in the order tried.
    `zone_subnets`: each fallback zone as written -> (subnet id, zone name). A resume tries every type in the
    group's zone, then every type in each fallback zone."""
    assert plan.spec.nodes_range is not None
    group = power_group_name(plan)
    subnets = [(subnet_id, zone), *((zone_subnets or {})[other] for other in plan.spec.fallback_zones)]
    targets = tuple(AwsTarget(instance_type=kind, subnet_id=subnet, availability_zone=where,
                              launch_template_id=template)
                    for subnet, where in subnets
                    for kind, template in [(plan.instance.name, ""), *fallback_templates])
    return PowerGroup(name=group, partition=plan.spec.scheduler.slurm.partition,
                      node_prefix=node_prefix(plan.cluster_name, plan.group), max_nodes=plan.spec.nodes_range.max,
                      min_nodes=plan.spec.nodes_range.min,
                      aws=AwsGroup(launch_template_id=template_id, targets=targets,
                                   market=MARKETS[plan.spec.market.type],
                                   placement_group=placement_group if plan.placement_group else ""))


def power_config(region: str, cluster_id: str, groups: Sequence[tuple[ClusterPlan, str, Sequence[tuple[str, str]]]],
                 subnet_id: str, zone: str, placement_group: str, metrics: bool,
                 zone_subnets: dict[str, tuple[str, str]] | None = None) -> PowerConfig:
    """`groups`: (plan, launch template id, (type, template id) per fallback type) per elastic group;
    `zone_subnets`: each fallback zone -> (its subnet id, its zone name)."""
    return PowerConfig(cloud="aws", cluster_id=cluster_id, aws=AwsApi(region=region),
                       groups=tuple(power_group(plan, template, subnet_id, zone, placement_group, fallbacks,
                                                zone_subnets)
                                    for plan, template, fallbacks in groups),
                       metrics_file=METRICS_FILE if metrics else "")


def power_policy(region: str, cluster_id: str, template_arns: Sequence[str], node_role_arn: str) -> str:
    """The controller's power statements (JSON, sorted keys: the same inputs give the same document)."""
    launched = [f"arn:*:ec2:{region}:*:{kind}/*" for kind in LAUNCHED]
    from_templates = {"ArnEquals": {"ec2:LaunchTemplate": sorted(template_arns)}}
    cluster_tag = {f"aws:RequestTag/{CLUSTER_KEY}": cluster_id}
    own = {f"ec2:ResourceTag/{CLUSTER_KEY}": cluster_id}
    instances = f"arn:*:ec2:{region}:*:instance/*"
    used = [f"arn:*:ec2:{region}::image/*", *(f"arn:*:ec2:{region}:*:{kind}/*" for kind in USED)]
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Sid": "PowerDescribe", "Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
        {"Sid": "PowerFleetTagged", "Effect": "Allow", "Action": ["ec2:CreateFleet"],
         "Resource": [f"arn:*:ec2:{region}:*:fleet/*", *launched], "Condition": {"StringEquals": cluster_tag}},
        {"Sid": "PowerFleetTemplates", "Effect": "Allow", "Action": ["ec2:CreateFleet"],
         "Resource": sorted(template_arns)},
        {"Sid": "PowerFleetUses", "Effect": "Allow", "Action": ["ec2:CreateFleet"], "Resource": used},
        {"Sid": "PowerLaunchTagged", "Effect": "Allow", "Action": ["ec2:RunInstances"], "Resource": launched,
         "Condition": {**from_templates, "StringEquals": cluster_tag}},
        {"Sid": "PowerLaunchFromTemplate", "Effect": "Allow", "Action": ["ec2:RunInstances"], "NotResource": launched,
         "Condition": from_templates},
        {"Sid": "PowerTagOnCreate", "Effect": "Allow", "Action": ["ec2:CreateTags"],
         "Resource": [*launched, f"arn:*:ec2:{region}:*:fleet/*"],
         "Condition": {"StringEquals": {"ec2:CreateAction": list(CREATE_ACTIONS)}}},
        {"Sid": "PowerNameNode", "Effect": "Allow", "Action": ["ec2:CreateTags"], "Resource": instances,
         "Condition": {"StringEquals": own, "ForAllValues:StringEquals": {"aws:TagKeys": [NODE_NAME_KEY]}}},
        {"Sid": "PowerTerminate", "Effect": "Allow", "Action": ["ec2:TerminateInstances"], "Resource": instances,
         "Condition": {"StringEquals": own}},
        {"Sid": "PowerPassNodeRole", "Effect": "Allow", "Action": ["iam:PassRole"], "Resource": node_role_arn,
         "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}},
    ]}, sort_keys=True)


@dataclass(frozen=True)
class ElasticTemplate:
    plan: ClusterPlan
    template: aws.ec2.LaunchTemplate
    fallbacks: tuple[tuple[ClusterPlan, aws.ec2.LaunchTemplate], ...] = ()
    """Each fallback type's plan and launch template, in the order a resume tries them."""

    def templates(self) -> list[aws.ec2.LaunchTemplate]:
        return [self.template, *(template for _, template in self.fallbacks)]


def grant_power_permissions(name: str, region: str, cluster_id: str, controller_role: pulumi.Input[str],
                            templates: Sequence[ElasticTemplate], node_role_arn: pulumi.Input[str],
                            opts: pulumi.ResourceOptions) -> aws.iam.RolePolicy:
    """The controller's least privilege over the elastic groups (child `{name}-slurm-role-power`)."""
    document = pulumi.Output.all(node_role_arn, *[template.arn for item in templates
                                                  for template in item.templates()]).apply(
        lambda values: power_policy(region, cluster_id, values[1:], values[0]))
    return aws.iam.RolePolicy(f"{name}-slurm-role-power", role=controller_role, policy=document, opts=opts)
