"""The spec rules of a cluster with node groups: every rule of a one-group spec, run on each group's resolved spec,
plus the rules that span groups (partitions, the default partition). Group names are checked with the spec's shape
(`spec.model.GroupName`).

A problem in a field the group may set is reported at the group's path; a problem in a cluster field that every
group has alike is reported once, at the field, and one that only some groups have names them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..spec.errors import MISSING, Problem
from ..spec.model import MAX_CLUSTER_NODES, REQUIRED_WITHOUT_GROUPS, ClusterSpec
from ..spec.rules import check_rules
from .resolve import GROUP_FIELDS, GroupSpec, resolved_groups


def node_group_problems(spec: ClusterSpec) -> list[Problem]:
    """Every problem of `spec`'s groups (`spec.node_groups` is set), each once, at the path the user writes."""
    groups, problems = resolved_groups(spec)
    problems = [*cluster_field_problems(spec), *problems, *partition_problems(spec, groups),
                *size_problems(groups)]
    missing = [problem for group in groups for problem in missing_problems(group)]
    complete = [group for group in groups if not missing_problems(group)]
    return [*problems, *missing, *merged_group_problems({group.name: check_rules(group.spec) for group in complete})]


def cluster_field_problems(spec: ClusterSpec) -> list[Problem]:
    """Settings that mean one group, which a cluster of several groups sets per group instead."""
    problems = []
    if spec.workload == "inference":
        problems.append(Problem("node_groups", sorted(spec.node_groups), "an inference fleet is one group behind its "
                                "load balancer; node groups are for training clusters: drop `node_groups`, or use "
                                "`workload: training`"))
    for name, group in sorted(spec.node_groups.items()):
        if group.node is not None and "exporters" in group.node.model_fields_set:
            problems.append(Problem(f"node_groups.{name}.node.exporters", group.node.exporters.model_dump(),
                                    "the exporters are the cluster's: every node is scraped and alerted on alike, "
                                    "and the firewall opens their ports once; set `node.exporters` at the top level"))
    if "partition" in spec.scheduler.slurm.model_fields_set:
        problems.append(Problem("scheduler.slurm.partition", spec.scheduler.slurm.partition, "with `node_groups` each "
                                "group is a partition of its own: set `node_groups.<group>.slurm_partition` (default: "
                                "the group's name)"))
    return problems


def partition_problems(spec: ClusterSpec, groups: Sequence[GroupSpec]) -> list[Problem]:
    """One partition per group, one default partition, and partition settings only where Slurm runs."""
    problems = []
    slurm = spec.scheduler.kind == "slurm"
    named = {name for name, group in spec.node_groups.items() if group.slurm_partition is not None}
    defaults = sorted(name for name, group in spec.node_groups.items() if group.slurm_default)
    if not slurm:
        problems += [Problem(f"node_groups.{name}.slurm_partition", spec.node_groups[name].slurm_partition,
                             "only applies with `scheduler.kind: slurm`") for name in sorted(named)]
        problems += [Problem(f"node_groups.{name}.slurm_default", True, "only applies with `scheduler.kind: slurm`")
                     for name in defaults]
        return problems
    owner: dict[str, str] = {}
    for group in groups:
        if group.partition in owner:
            problems.append(Problem(f"node_groups.{group.name}.slurm_partition", group.partition,
                                    f"node group {owner[group.partition]!r} forms that partition already; each group "
                                    "is a partition of its own: name another"))
        owner.setdefault(group.partition, group.name)
    problems += [Problem(f"node_groups.{name}.slurm_default", True, f"node group {defaults[0]!r} is the default "
                         "partition already; mark one group") for name in defaults[1:]]
    return problems


def size_problems(groups: Sequence[GroupSpec]) -> list[Problem]:
    """A cluster holds at most MAX_CLUSTER_NODES nodes, all its groups together (one group's bound on `nodes`)."""
    sizes = {group.name: group.spec.nodes for group in groups if group.spec.nodes is not None}
    if sum(sizes.values()) <= MAX_CLUSTER_NODES:
        return []
    return [Problem("node_groups", sizes, f"{sum(sizes.values())} nodes in all; a cluster holds at most "
                    f"{MAX_CLUSTER_NODES}, all its groups together: split it into clusters of their own")]


def missing_problems(group: GroupSpec) -> list[Problem]:
    return [Problem(f"node_groups.{group.name}.{name}", MISSING, f"required: set it in the group or at the top level "
                    f"(`{name}`)") for name in REQUIRED_WITHOUT_GROUPS if getattr(group.spec, name) is None]


def merged_group_problems(per_group: Mapping[str | None, Iterable[Problem]],
                          names: Sequence[str | None] | None = None) -> list[Problem]:
    """The problems found in each group's resolved spec, at the path the user writes: a group field at the group's
    path; a cluster field once when every group (of `names`, default: those in `per_group`) has the same problem,
    else naming the groups that have it."""
    names = list(per_group) if names is None else list(names)
    problems: list[Problem] = []
    shared: dict[Problem, list[str | None]] = {}
    for name, found in per_group.items():
        for problem in found:
            if name is None:
                problems.append(problem)
            elif _root(problem.path) in GROUP_FIELDS or problem.path == "scheduler.slurm.partition":
                problems.append(_at_group(name, problem))
            else:
                shared.setdefault(problem, []).append(name)
    for problem, owners in shared.items():
        if len(owners) == len(names):
            problems.append(problem)
        else:
            which = ", ".join(repr(owner) for owner in owners)
            problems.append(Problem(problem.path, problem.value, f"{problem.expected} (in node group"
                                    f"{'s' if len(owners) > 1 else ''} {which})"))
    return _unique(problems)


def _at_group(name: str, problem: Problem) -> Problem:
    if problem.path == "scheduler.slurm.partition":
        return Problem(f"node_groups.{name}.slurm_partition", problem.value, problem.expected)
    return Problem(f"node_groups.{name}.{problem.path}", problem.value, problem.expected)


def _root(path: str) -> str:
    return path.split(".")[0].split("[")[0]


def _unique(problems: list[Problem]) -> list[Problem]:
    seen: set[str] = set()
    unique = []
    for problem in problems:
        if str(problem) not in seen:
            seen.add(str(problem))
            unique.append(problem)
    return unique
