"""The nodes' dedicated service account and the least privilege it needs.

- `roles/logging.logWriter`: the Ops Agent / journald shipping writes logs;
- `roles/monitoring.metricWriter`: the node's metrics;
- a custom role with `compute.instances.get` and `compute.instances.setLabels`, and only on this cluster's own
  instances (an IAM condition on the instance name prefix): the boot health check marks an unhealthy node with a
  label the operator (or automation) acts on; `setLabels` needs the current label fingerprint, hence `get`.
No default compute service account, no project-wide editor. The account id and role id are derived from the stack
and component names, so two stacks in one project do not collide, and never change between runs.
The service account's email is `<account_id>@<project>.iam.gserviceaccount.com`, which GCP fixes; it is built
from the project here so that offline plans show it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from .labels import Describer, short_name

LOG_WRITER = "roles/logging.logWriter"
METRIC_WRITER = "roles/monitoring.metricWriter"
HEALTH_PERMISSIONS = ("compute.instances.get", "compute.instances.setLabels")
ACCOUNT_ID_MAX = 30


@dataclass(frozen=True)
class NodeIdentity:
    account: gcp.serviceaccount.Account
    email: pulumi.Output[str]


def account_id(stack: str, name: str, unique: str) -> str:
    """6-30 characters of a-z, 0-9 and `-`, unique per project, stack and component (`unique` ends it)."""
    return f"{short_name(f'{name}-{stack}', ACCOUNT_ID_MAX - len(unique) - 1)}-{unique}"


def health_role_id(stack: str, name: str, unique: str) -> str:
    """A custom role id: 3-64 characters of letters, digits, `_` and `.`, unique like `account_id`."""
    return f"{short_name(f'{name}_{stack}_health', 64 - len(unique) - 1, allowed='a-z0-9_', sep='_')}_{unique}"


def own_instances_condition(project: pulumi.Input[str], zone: str, base_instance_name: str) -> pulumi.Output[str]:
    """CEL: the request is about one of this cluster's instances (the instance group names them `<base>-xxxx`)."""
    return pulumi.Output.concat('resource.name.startsWith("projects/', project, "/zones/", zone, "/instances/",
                                base_instance_name, '-")')


def build_identity(name: str, stack: str, project: pulumi.Input[str], zone: str, base_instance_name: str,
                   describe: Describer, opts: pulumi.ResourceOptions, unique: str) -> NodeIdentity:
    account_name = account_id(stack, name, unique)
    account = gcp.serviceaccount.Account(f"{name}-sa", account_id=account_name, display_name=f"gpufleet {name} nodes",
                                         description=describe("sa"), opts=opts)
    email = pulumi.Output.concat(account_name, "@", project, ".iam.gserviceaccount.com")
    member = pulumi.Output.concat("serviceAccount:", email)
    after_account = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[account]))
    for role, granted in (("sa-logging", LOG_WRITER), ("sa-monitoring", METRIC_WRITER)):
        gcp.projects.IAMMember(f"{name}-{role}", project=project, role=granted, member=member, opts=after_account)
    health = gcp.projects.IAMCustomRole(
        f"{name}-health-role", role_id=health_role_id(stack, name, unique), title=f"gpufleet {name} node health reporter",
        permissions=list(HEALTH_PERMISSIONS), description=describe("health-role"), project=project, opts=opts)
    gcp.projects.IAMMember(
        f"{name}-sa-health", project=project, role=pulumi.Output.concat("projects/", project, "/roles/", health.role_id),
        member=member,
        condition=gcp.projects.IAMMemberConditionArgs(
            title="gpufleet-own-instances", description="only this cluster's instances",
            expression=own_instances_condition(project, zone, base_instance_name)),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[account, health])))
    return NodeIdentity(account=account, email=email)
