"""The one checking pipeline every cloud shares: spec -> catalog selection -> the cloud's `rules.py` -> user data.

`plan_cluster(spec, catalog)` runs every stage and raises one `SpecError` with every problem it found, before any
resource is declared; the cloud components consume the `ClusterPlan` it returns and never check again.
`check_cluster_input(raw)` is the same for the raw `gpufleet:cluster` value: when the spec's own shape is wrong, the
stages that do not depend on the wrong fields still run on a repaired copy, so `--set accelerator.gpu=H10
--set nodes=0` reports both fields at once.

Stages, in order:
1. structure and shape (`gpufleet.spec.parse_cluster_spec`: types, bounds, cross-field rules);
2. the cloud's spec rules (`gpufleet.<cloud>.rules.spec_problems`: CIDR ranges, tag rules, id shapes, keys);
3. catalog selection (`gpufleet.catalog.selector.select`: instance type, zone, fabric, price, node software);
4. the cloud's plan rules (`plan_problems`: rules that need the instance type, fabric or placement);
5. the node's user data, rendered once and measured against the cloud's one limit. On AWS a cloud-config over
   16 KB is not refused: it goes to S3 behind a boothook (`gpufleet.aws.node_config`), and `user_data` is empty.
"""

from __future__ import annotations

from dataclasses import fields
from importlib import import_module
from types import ModuleType
from typing import Any

from gpufleet.cloud_init import LIMITS, encode_user_data, measured_size
from gpufleet.cloud_init.s3_bootstrap import fits_inline

from .boot import user_data_for
from .catalog.loader import Catalog, load_catalog
from .catalog.selector import Selection, select
from .deploytime.containers import Pin, deferred_digest
from .groups.checks import merged_group_problems
from .groups.fallbacks import fallback_plan
from .groups.placement import fabric_problems, shared_placement
from .groups.plans import ClusterPlan, NodeGroupPlans
from .groups.resolve import group_specs
from .spec.errors import Problem, SpecError, raise_if
from .spec.model import ClusterSpec
from .spec.parse import parse_cluster_spec
from .spec.raw import raw_problems

DEFAULT_CLUSTER_NAME = "gpufleet"
# Stand-ins for required fields whose given value is wrong, so later stages can still check the other fields.
PLACEHOLDERS = {"nodes": 1}
# Clouds whose node config may be fetched by reference when it does not fit the user-data field.
BY_REFERENCE = ("aws",)


def cloud_rules(cloud: str) -> ModuleType:
    """`gpufleet.<cloud>.rules`: `spec_problems(spec)`, `plan_problems(selection)`, `plan_warnings(selection)`."""
    return import_module(f"gpufleet.{cloud}.rules")


def plan_node_groups(spec: ClusterSpec, catalog: Catalog | None = None, *,
                     name: str = DEFAULT_CLUSTER_NAME, pin: Pin = deferred_digest) -> NodeGroupPlans:
    """The checked plan of every node group of `spec` (one, for a spec without `node_groups`), and the checks that
    span groups; raises `SpecError` with every problem of every group, each at the group's path."""
    groups = group_specs(spec)
    if len(groups) == 1 and groups[0].name is None:
        return NodeGroupPlans(spec, (plan_cluster(spec, catalog, name=name, pin=pin),))
    plans, per_group = [], {}
    for group in groups:
        try:
            plans.append(plan_cluster(group.spec, catalog, name=name, pin=pin, group=group.name,
                                      slurm_default=group.slurm_default))
        except SpecError as err:
            per_group[group.name] = err.problems
    problems = merged_group_problems(per_group, [group.name for group in groups])
    if problems:
        raise SpecError(problems)
    grouped = shared_placement(spec, tuple(plans))
    problems = [*fabric_problems(grouped), *cloud_rules(spec.cloud).cluster_problems(grouped)]
    if problems:
        raise SpecError(problems)
    return grouped


def plan_cluster(spec: ClusterSpec, catalog: Catalog | None = None, *,
                 name: str = DEFAULT_CLUSTER_NAME, pin: Pin = deferred_digest, group: str | None = None,
                 slurm_default: bool = True) -> ClusterPlan:
    """The checked plan for `spec`, one node group's (resolved) spec; raises `SpecError` with every problem of every
    stage that could run. `pin`: how the node's container images get their digests; the cloud components pass
    `registry_digest` (asked only once the spec has passed every earlier stage), checks and plans keep the offline
    stand-in. `group`: the node group's name, None for a spec without `node_groups`."""
    assert spec.node_groups is None, "plan_node_groups plans each group of a spec with node_groups"
    rules = cloud_rules(spec.cloud)
    problems = list(rules.spec_problems(spec))
    try:
        selection = select(spec, catalog or load_catalog())
    except SpecError as err:
        raise SpecError(_unique([*problems, *err.problems])) from None
    problems += rules.plan_problems(selection)
    fallbacks, fallback_problems = fallback_plan(selection, catalog or load_catalog(), rules.plan_problems)
    problems += [*fallback_problems, *placed_fallback_zone_problems(selection)]
    cloud_config = user_data_for(selection, name, deferred_digest if problems else pin, group=group)
    problems += user_data_problems(cloud_config, spec.cloud)
    if problems:
        raise SpecError(_unique(problems))
    by_reference = spec.cloud in BY_REFERENCE and not fits_inline(cloud_config, spec.cloud)
    warnings = (*selection.warnings, *missing_price_warnings(selection), *rules.plan_warnings(selection),
                *by_reference_warnings(spec, cloud_config, by_reference))
    values = {f.name: getattr(selection, f.name) for f in fields(Selection)}
    return ClusterPlan(**{**values, "warnings": tuple(dict.fromkeys(warnings))}, cluster_name=name,
                       cloud_config=cloud_config, by_reference=by_reference,
                       user_data="" if by_reference else encode_user_data(cloud_config, spec.cloud),
                       group=group, slurm_default=slurm_default, fallbacks=fallbacks)


def fallback_type_plans(plan: ClusterPlan, catalog: Catalog | None = None, *,
                        pin: Pin = deferred_digest) -> tuple[ClusterPlan, ...]:
    """The plan of each of an elastic group's fallback types, in the order a resume tries them: the group's spec
    with that type chosen, for clouds that declare a node config per type (a GCP instance template, an Azure scale
    set). `plan_cluster` checked each already, so a problem here is an internal error."""
    plans = []
    for name in plan.fallbacks:
        accelerator = plan.spec.accelerator.model_copy(update={"instance_type": name, "gpu": None,
                                                               "gpus_per_node": None, "fallback_types": []})
        plans.append(plan_cluster(plan.spec.model_copy(update={"accelerator": accelerator}), catalog,
                                  name=plan.cluster_name, pin=pin, group=plan.group,
                                  slurm_default=plan.slurm_default))
    return tuple(plans)


def placed_fallback_zone_problems(selection: Selection) -> list[Problem]:
    """A placement the selection turned on (multi-node, or an RDMA fabric) keeps the group in `zone`."""
    spec = selection.spec
    if not spec.fallback_zones or spec.placement_group is not None or not selection.placement_group:
        return []
    return [Problem("fallback_zones", spec.fallback_zones, f"{selection.instance.name} on "
                    f"{selection.fabric or 'TCP'} is placed in one zone (a cluster placement group): set "
                    "`placement_group: false` to let nodes start in other zones, or drop `fallback_zones`")]


def check_cluster_input(raw: Any, catalog: Catalog | None = None) -> ClusterSpec:
    """Parses and plans `raw` (the `gpufleet:cluster` value); raises one `SpecError` with the problems of every
    stage. The spec it returns has passed the whole pipeline."""
    try:
        spec = parse_cluster_spec(raw)
    except SpecError as err:
        raise SpecError(_unique([*err.problems, *_later_problems(raw, err.problems, catalog)])) from None
    raise_if(undeclared_elastic_problems(plan_node_groups(spec, catalog)))
    return spec


ELASTIC_CLOUDS = frozenset({"aws", "azure", "gcp"})
"""The clouds whose component declares elastic groups (`components/{aws,azure,gcp}/elastic.py`): all three."""


def undeclared_elastic_problems(plans: NodeGroupPlans) -> list[Problem]:
    """Elastic groups (`nodes: {min, max}`) pass every check and are priced, but only the `ELASTIC_CLOUDS`
    components declare them (the controller's power programs, CLOUD nodes and scoped permissions): elsewhere
    refused, rather than declared as a fixed fleet of `max` nodes that never shrinks. The cloud components and
    `check_cluster_input` call this; `plan_node_groups` itself plans elastic groups."""
    return [Problem(f"node_groups.{plan.group}.nodes" if plan.group else "nodes", plan.spec.nodes_range.model_dump(),
                    f"elastic groups are checked and priced, but this release's {plan.spec.cloud} component does not "
                    "declare them yet: give a fixed number of nodes")
            for plan in plans.groups if plan.spec.nodes_range is not None and plan.spec.cloud not in ELASTIC_CLOUDS]


def user_data_problems(cloud_config: str, cloud: str) -> list[Problem]:
    """The one user-data size check: the cloud's limit on its API field (cloud_init.LIMITS); none where a config too
    large goes by reference."""
    limit, unit = LIMITS[cloud]
    size = measured_size(cloud_config, cloud)
    if size <= limit or cloud in BY_REFERENCE:
        return []
    return [Problem("node", f"{size} {unit} of {cloud} user data", f"{cloud} allows at most {limit} {unit}; shorten `node.nccl.env` or `node.spot.drain_command`, or turn off optional parts "
                    "(`node.exporters`, `node.health`, `node.mps`, `node.mig`)")]


def by_reference_warnings(spec: ClusterSpec, cloud_config: str, by_reference: bool) -> list[str]:
    """A node config fetched from S3 needs a route to S3 from the nodes' subnet: gpufleet's own network has one (its
    S3 gateway endpoint and NAT gateway), an existing subnet may not."""
    if not (by_reference and spec.network.existing_subnet_id):
        return []
    size, limit = measured_size(cloud_config, spec.cloud), LIMITS[spec.cloud][0]
    return [f"the node config ({size:,} gzip bytes, too large for the launch template's {limit:,}) is fetched from S3 "
            "at boot: the route table of `network.existing_subnet_id` needs a NAT gateway or an S3 gateway "
            "endpoint, or each node powers off after 10 minutes of retries and the group replaces it"]


def missing_price_warnings(selection: Selection) -> list[str]:
    """The cost estimate is unknown when the catalog has no price for the market the cluster buys in."""
    spec, instance, price = selection.spec, selection.instance, selection.price
    warnings = []
    if spec.market.type != "on-demand" and price.spot is None:
        warnings.append(f"the catalog has no spot price for {instance.name} in {spec.region}: the estimated cost is "
                        f"unknown; {spec.cloud} bills the current spot price, capped by your maximum price")
    if spec.market.type != "spot" and price.on_demand is None:
        warnings.append(f"the catalog has no on-demand price for {instance.name} in {spec.region}: the estimated "
                        "cost is unknown")
    return warnings


def _later_problems(raw: Any, shape_problems: list[Problem], catalog: Catalog | None) -> list[Problem]:
    """Problems of the later stages in the fields the shape stage did not refuse, found on a repaired copy of `raw`
    (refused fields dropped back to their defaults, or a neutral stand-in where they are required)."""
    if not isinstance(raw, dict) or raw_problems(raw):
        return []
    refused = {p.path.split(".")[0].split("[")[0] for p in shape_problems}
    if not refused or not refused <= set(raw) | set(PLACEHOLDERS):
        return []  # a required field is missing: nothing sensible to check against
    if "node_groups" in refused:
        return _other_groups_problems(raw, shape_problems, catalog)
    repaired = {key: value for key, value in raw.items() if key not in refused}
    repaired.update({key: value for key, value in PLACEHOLDERS.items() if key in refused})
    try:
        spec = parse_cluster_spec(repaired)
        plan_node_groups(spec, catalog)
    except SpecError as err:
        return [p for p in err.problems if p.path.split(".")[0].split("[")[0] not in refused]
    return []


def _other_groups_problems(raw: dict, shape_problems: list[Problem], catalog: Catalog | None) -> list[Problem]:
    """With node groups: the later stages' problems of the groups the earlier stages did not refuse, checked without
    the refused ones (a problem of the cluster's own fields leaves nothing to check)."""
    groups = raw.get("node_groups")
    refused = {p.path.split(".")[1] if p.path.startswith("node_groups.") else None for p in shape_problems}
    if not isinstance(groups, dict) or None in refused or not set(groups) - refused:
        return []
    repaired = {**raw, "node_groups": {name: group for name, group in groups.items() if name not in refused}}
    try:
        plan_node_groups(parse_cluster_spec(repaired), catalog)
    except SpecError as err:
        return list(err.problems)
    return []


def _unique(problems: list[Problem]) -> list[Problem]:
    """Each problem once (two stages may find the same one), in order."""
    seen: set[str] = set()
    unique = []
    for problem in problems:
        if str(problem) not in seen:
            seen.add(str(problem))
            unique.append(problem)
    return unique
