"""Elastic node groups on GCP: what Slurm's power programs need to create and delete the group's instances, and
nothing more.

- No managed instance group: ResumeProgram creates each node's instance by name with zonal `instances.bulkInsert`
  from the group's instance template, in the group's zone and then its `fallback_zones`, and SuspendProgram deletes
  it by name (`gpufleet.cloud_init.power.gcp` says why a MIG's `createInstances` cannot fall back within one
  resume). The group is declared at size 0: its template only. `min` nodes are kept up by Slurm itself
  (`SuspendExcNodes=<nodes>:<min>`) and started by the power programs' minute `sync`, so `pulumi up` never creates
  or deletes a node and never races the programs over one.
- Instance names are the Slurm node names, `<base>-<group>-<n>`: the cluster's base name carries the stack and the
  cluster's hash (`naming.cluster_hash`), so two stacks in one project never create the same name in a zone.
- The template carries the node prefix (`gpufleet-slurm-node-prefix` metadata: the node runs as the CLOUD node its
  instance name names) and the cluster's hash as the `gpufleet-cluster` label, the only instances the programs
  accept as theirs.
- The controller's service account gets, on the project, a custom role with the permissions `bulkInsert`, `get` and
  `delete` check, under an IAM condition that names only this group's instances and boot disks (by name prefix in its
  zones), its template, the cluster's subnetworks and placement policy; a second custom role reads zone operations
  (what `zoneOperations.wait` and the operation filter need: read-only, and Compute Engine evaluates `list` on the
  project, which a name condition cannot match); and `roles/iam.serviceAccountUser` on the nodes' service account
  only (the instances run as it). Nothing else: no project-wide `compute.instanceAdmin`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from gpufleet.cloud_init.power.config import (
    CLUSTER_KEY,
    GCP_PREFIX_KEY,
    GcpApi,
    GcpGroup,
    GcpTarget,
    PowerConfig,
    PowerGroup,
)

from ..groups.plans import NodeGroupPlans
from ..pipeline import ClusterPlan
from ..scheduler.elastic import node_prefix
from ..spec.errors import Problem
from .labels import Describer, short_name

INSTANCE_NAME_MAX = 63
POWER_PERMISSIONS = (
    "compute.disks.create",
    "compute.instanceTemplates.useReadOnly",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.resourcePolicies.use",
    "compute.subnetworks.use",
)
"""What creating an instance from a template checks (Compute Engine's "Required permissions" for instances.insert
and bulkInsert: the disks, metadata, labels, service account, subnetwork and policy the template sets), plus get and
delete by name."""
OPERATION_PERMISSIONS = ("compute.zoneOperations.get", "compute.zoneOperations.list")
SERVICE_ACCOUNT_USER = "roles/iam.serviceAccountUser"
METRICS_FILE = "/var/lib/prometheus/node-exporter/gpufleet-power.prom"


def power_node_prefix(base_name: str, group: str | None) -> str:
    """`<base>-<group>-`, valid as a power config prefix (lower case, starting with a letter)."""
    return node_prefix(base_name, group)


def prefix_of(base_name: str) -> Callable[[ClusterPlan], str]:
    return lambda plan: power_node_prefix(base_name, plan.group)


def elastic_gcp_problems(plans: Sequence[ClusterPlan], base_name: str) -> list[Problem]:
    """What this release's GCP component cannot declare for an elastic group yet, at the field."""
    problems = []
    for plan in plans:
        if plan.spec.nodes_range is None:
            continue
        where = f"node_groups.{plan.group}." if plan.group else ""
        longest = f"{power_node_prefix(base_name, plan.group)}{plan.spec.nodes_range.max}"
        if len(longest) > INSTANCE_NAME_MAX:
            problems.append(Problem(f"{where}nodes", plan.spec.nodes_range.model_dump(),
                                    f"the node name {longest} is longer than GCP's {INSTANCE_NAME_MAX} characters: "
                                    "use a shorter group or cluster name"))
    return problems


def zones(plan: ClusterPlan) -> list[str]:
    """The zones a resume tries, in order: the group's, then its fallback zones."""
    return list(dict.fromkeys([plan.spec.zone, *plan.spec.fallback_zones]))


def elastic_zones(plans: NodeGroupPlans) -> list[str]:
    """The zones other than the cluster's that elastic groups' nodes may run in (monitoring discovers each)."""
    return list(dict.fromkeys(zone for plan in plans.groups if plan.spec.nodes_range is not None
                              for zone in plan.spec.fallback_zones))


def power_group(plan: ClusterPlan, prefix: str, templates: Sequence[tuple[str, str]]) -> PowerGroup:
    """`templates`: (machine type, template self link) of the chosen type, then of each fallback type. A resume
    tries each type in the group's zone, then each type in the next zone."""
    group = plan.group or plan.spec.scheduler.slurm.partition
    return PowerGroup(name=group, partition=plan.spec.scheduler.slurm.partition, node_prefix=prefix,
                      max_nodes=plan.spec.nodes_range.max, min_nodes=plan.spec.nodes_range.min,
                      gcp=GcpGroup(targets=tuple(GcpTarget(instance_template=link, zone=zone, machine_type=machine)
                                                 for zone in zones(plan) for machine, link in templates)))


def power_config(project: str, cluster_id: str, groups: Sequence[tuple[ClusterPlan, str, Sequence[tuple[str, str]]]],
                 metrics: bool) -> PowerConfig:
    """`groups`: (plan, node prefix, (machine type, template self link) per type) per elastic group."""
    return PowerConfig(cloud="gcp", cluster_id=cluster_id, gcp=GcpApi(project=project),
                       groups=tuple(power_group(*group) for group in groups),
                       metrics_file=METRICS_FILE if metrics else "")


def template_metadata(prefix: str) -> dict[str, str]:
    return {GCP_PREFIX_KEY: prefix}


def template_labels(cluster_id: str) -> dict[str, str]:
    return {CLUSTER_KEY: cluster_id}


@dataclass(frozen=True)
class PowerGrant:
    """What the condition names: one elastic group's instances and disks, its template, the cluster's network."""

    prefix: str
    zones: tuple[str, ...]
    template_names: tuple[pulumi.Input[str], ...]
    """The group's templates: the chosen type's, then each fallback type's."""


def condition_expression(project: str, region: str, grants: Sequence[tuple[str, tuple[str, ...], Sequence[str]]],
                         subnetworks: Sequence[str], policies: Sequence[str]) -> str:
    """CEL over `resource.name`: the groups' instances and disks by name prefix in their zones, their templates,
    the cluster's subnetworks and placement policies, each exactly."""
    base = f"projects/{project}"
    clauses = []
    for prefix, group_zones, templates in grants:
        for zone in group_zones:
            clauses += [f'resource.name.startsWith("{base}/zones/{zone}/instances/{prefix}")',
                        f'resource.name.startsWith("{base}/zones/{zone}/disks/{prefix}")']
        clauses += [f'resource.name == "{base}/global/instanceTemplates/{template}"' for template in templates]
    clauses += [f'resource.name == "{base}/regions/{region}/subnetworks/{subnet}"' for subnet in subnetworks]
    clauses += [f'resource.name == "{base}/regions/{region}/resourcePolicies/{policy}"' for policy in policies]
    return " || ".join(dict.fromkeys(clauses))


def role_id(name: str, stack: str, unique: str, what: str) -> str:
    return f"{short_name(f'{name}_{stack}_{what}', 64 - len(unique) - 1, allowed='a-z0-9_', sep='_')}_{unique}"


def grant_power_permissions(name: str, stack: str, unique: str, project: pulumi.Input[str], region: str,
                            controller_email: pulumi.Input[str], node_account: gcp.serviceaccount.Account,
                            grants: Sequence[PowerGrant], subnetworks: Sequence[pulumi.Input[str]],
                            policies: Sequence[pulumi.Input[str]], describe: Describer,
                            opts: pulumi.ResourceOptions) -> None:
    """The controller's least privilege over the elastic groups (children `{name}-slurm-power-*`)."""
    role = f"{name}-slurm-power"
    member = pulumi.Output.concat("serviceAccount:", controller_email)
    power = gcp.projects.IAMCustomRole(
        f"{role}-role", role_id=role_id(name, stack, unique, "slurm_power"),
        title=f"gpufleet {name} Slurm power programs", permissions=list(POWER_PERMISSIONS),
        description=describe("slurm-power-role"), project=project, opts=opts)
    operations = gcp.projects.IAMCustomRole(
        f"{role}-ops-role", role_id=role_id(name, stack, unique, "slurm_power_ops"),
        title=f"gpufleet {name} Slurm power programs: operations", permissions=list(OPERATION_PERMISSIONS),
        description=describe("slurm-power-ops-role"), project=project, opts=opts)
    expression = pulumi.Output.all(project, [pulumi.Output.all(g.prefix, list(g.zones), list(g.template_names))
                                             for g in grants], list(subnetworks), list(policies)).apply(
        lambda values: condition_expression(values[0], region, [(g[0], tuple(g[1]), g[2]) for g in values[1]],
                                            values[2], values[3]))
    gcp.projects.IAMMember(
        f"{role}-grant", project=project, member=member,
        role=pulumi.Output.concat("projects/", project, "/roles/", power.role_id),
        condition=gcp.projects.IAMMemberConditionArgs(
            title="gpufleet-elastic-groups", description="only this cluster's elastic groups", expression=expression),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[power])))
    gcp.projects.IAMMember(
        f"{role}-ops-grant", project=project, member=member,
        role=pulumi.Output.concat("projects/", project, "/roles/", operations.role_id),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[operations])))
    gcp.serviceaccount.IAMMember(f"{role}-act-as", service_account_id=node_account.name, role=SERVICE_ACCOUNT_USER,
                                 member=member, opts=opts)
