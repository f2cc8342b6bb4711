"""Each node group as a spec of its own: the cluster's fields, with the group's overrides on top.

A group names only what differs (`nodes`, `accelerator`, `market`, `image`, `root_disk_gib`, `node`); `node` is
merged key by key over the cluster's (a group that turns on MIG keeps the cluster's driver), the others replace the
cluster's value whole (a group's `accelerator: {gpu: L40S}` must not inherit the cluster's `instance_type`). The
group's partition becomes the resolved spec's `scheduler.slurm.partition` (with Slurm on), so Slurm's settings, like every other
stage, read one group's spec and need no other input.

Groups are ordered by name, never by their order in the stack file: Pulumi hands structured config to the program as
JSON re-encoded by its engine, which does not keep a mapping's order, so file order would differ between `pulumi up`
and `gpufleet plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..spec.errors import Problem
from ..spec.messages import problem_from
from ..spec.model import ClusterSpec, NodeGroup

GROUP_FIELDS = ("nodes", "accelerator", "market", "image", "root_disk_gib", "node")
"""The fields a group may set; every other field is the cluster's."""
MERGED_FIELDS = frozenset({"node"})
"""Fields a group merges key by key over the cluster's value; the others it replaces whole."""
GROUP_ONLY_FIELDS = ("slurm_partition", "slurm_default")


@dataclass(frozen=True)
class GroupSpec:
    """One node group: its name (None for a spec without `node_groups`) and its spec, resolved."""

    name: str | None
    spec: ClusterSpec
    slurm_default: bool = True

    @property
    def path(self) -> str:
        """Where this group's fields are written in the stack file: "" at the top level, else `node_groups.<name>.`."""
        return f"node_groups.{self.name}." if self.name else ""

    @property
    def partition(self) -> str:
        return self.spec.scheduler.slurm.partition


def group_specs(spec: ClusterSpec) -> tuple[GroupSpec, ...]:
    """The cluster's groups, resolved and ordered by name; raises `SpecError` only through `resolved_groups`."""
    groups, problems = resolved_groups(spec)
    assert not problems, problems  # parse_cluster_spec has refused these already
    return groups


def resolved_groups(spec: ClusterSpec) -> tuple[tuple[GroupSpec, ...], list[Problem]]:
    """(groups, problems): each group's spec validated as a whole, its problems at the group's path."""
    if spec.node_groups is None:
        return (GroupSpec(None, spec),), []
    names = sorted(spec.node_groups)
    default = next((name for name in names if spec.node_groups[name].slurm_default), names[0])
    base = spec.model_dump(mode="json", exclude={"node_groups"}, exclude_none=True)
    groups, problems = [], []
    for name in names:
        raw = resolved_raw(base, name, spec.node_groups[name])
        try:
            resolved = ClusterSpec.model_validate(raw)
        except ValidationError as err:
            problems += [_at_group_path(name, problem_from(e)) for e in err.errors()]
            continue
        groups.append(GroupSpec(name, resolved, slurm_default=name == default))
    return tuple(groups), problems


def resolved_raw(base: dict[str, Any], name: str, group: NodeGroup) -> dict[str, Any]:
    """The cluster's fields (`base`, dumped) with what `group` sets on top, and its partition."""
    raw = dict(base)
    named = group.model_dump(mode="json", exclude_unset=True, include=set(GROUP_FIELDS))
    if "nodes" in named:  # the group's count, fixed or `{min, max}`, replaces the cluster's whole
        raw.pop("nodes_range", None)
        named.update(group.model_dump(mode="json", exclude_unset=True, include={"nodes_range"}))
    for field, value in named.items():
        raw[field] = _merged(raw.get(field, {}), value) if field in MERGED_FIELDS else value
    scheduler = dict(raw.get("scheduler", {}))
    if scheduler.get("kind") == "slurm":
        scheduler["slurm"] = {**scheduler.get("slurm", {}), "partition": group.slurm_partition or name}
        raw["scheduler"] = scheduler
    return raw


def _merged(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        return {**base, **{key: _merged(base.get(key), value) for key, value in override.items()}}
    return override


def _at_group_path(name: str, problem: Problem) -> Problem:
    """A shape problem of a group's resolved spec lies in what the group sets (the cluster's own fields passed)."""
    path = "slurm_partition" if problem.path == "scheduler.slurm.partition" else problem.path
    return Problem(f"node_groups.{name}.{path}", problem.value, problem.expected)
