"""From `GpuClusterArgs` to a checked spec, with the values that come from other resources kept as Inputs.

Everything that is known when the program declares the component is checked then, by the same pipeline as a
stack file (`parse_cluster_spec`, the catalog selection, the cloud's rules), before anything is declared. An
argument that is an unresolved `pulumi.Output` (a subnet from a network stack, a key from a secret) is replaced
in that check by a stand-in that every rule accepts, and checked again, with its real value, by the same pipeline
when Pulumi resolves it (`apply`): a bad value then fails the resources that use it with the same field-named
message (a `pulumi.RunError`, no traceback), and nothing that uses it is created.

Builders must read these values from `ClusterInputs`, never from the spec, which holds the stand-ins.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pulumi

from .spec import ClusterSpec, Problem, SpecError, parse_cluster_spec

STAND_INS: dict[str, dict[str, str]] = {
    "network.existing_subnet_id": {
        "aws": "subnet-00000000000000000",
        "azure": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/gpufleet-pending/providers/"
                 "Microsoft.Network/virtualNetworks/gpufleet-pending/subnets/gpufleet-pending",
    },
    "access.ssh_public_key": {"aws": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                              "azure": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
    "image.id": {"aws": "ami-00000000000000000"},
    "access.iam_policy_arns[*]": {"aws": "arn:aws:iam::000000000000:policy/gpufleet-pending"},
    "tags.*": {"aws": "gpufleet-pending", "azure": "gpufleet-pending"},
}
"""Per deferrable path, a value each cloud's declaration-time rules accept. Clouds not listed need the value
itself before declaring (GCP labels and images, Azure images decide resource shapes), so an Output is refused."""


T = TypeVar("T")


class ClusterRefused(SpecError, pulumi.RunError):
    """A `SpecError` that Pulumi reports as a message only, with no traceback (it is also a `pulumi.RunError`)."""


def plan_or_refuse(plan: Callable[[ClusterSpec], T], spec: ClusterSpec) -> T:
    """`plan(spec)`, its `SpecError` raised as `ClusterRefused`."""
    try:
        return plan(spec)
    except SpecError as err:
        raise ClusterRefused(err.problems) from None


@dataclass(frozen=True)
class ClusterInputs:
    """The values of other resources a cluster uses, as given (plain) or checked once resolved (Outputs)."""

    existing_subnet_id: pulumi.Input[str] | None = None
    ssh_public_key: pulumi.Input[str] | None = None
    image_id: pulumi.Input[str] | None = None
    tags: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    iam_policy_arns: Sequence[pulumi.Input[str]] = ()


@dataclass(frozen=True)
class ClusterRequest:
    """The args as a spec (stand-ins in place of Outputs) plus where each Output goes."""

    cloud: str
    raw: dict[str, Any]
    spec: ClusterSpec
    deferred: dict[str, pulumi.Output]

    def inputs(self, check: Callable[[ClusterSpec], Any]) -> ClusterInputs:
        """The Inputs builders use; each Output, once resolved, is run through `parse_cluster_spec` and `check`."""
        spec = self.spec
        values = {path: self._checked(path, output, check) for path, output in self.deferred.items()}
        tags = {key: values.get(f"tags.{key}", value) for key, value in spec.tags.items()}
        return ClusterInputs(
            existing_subnet_id=values.get("network.existing_subnet_id", spec.network.existing_subnet_id),
            ssh_public_key=values.get("access.ssh_public_key", spec.access.ssh_public_key),
            image_id=values.get("image.id", spec.image.id),
            tags=tags,
            iam_policy_arns=[values.get(f"access.iam_policy_arns[{index}]", arn)
                             for index, arn in enumerate(spec.access.iam_policy_arns)])

    def _checked(self, path: str, output: pulumi.Output, check: Callable[[ClusterSpec], Any]) -> pulumi.Output:
        def validated(value: Any) -> Any:
            raw = copy.deepcopy(self.raw)
            _set(raw, path, value)
            try:
                check(parse_cluster_spec(raw))
            except SpecError as err:
                # A plain RunError: the SDK rewraps ValueErrors (SpecError is one) raised while serializing inputs.
                raise pulumi.RunError(str(err)) from None
            return value
        return output.apply(validated)


def _range_as_nodes(raw: Mapping[str, Any], where: str, problems: list[Problem]) -> dict[str, Any]:
    """GpuClusterArgs' `nodes_range` (a typed field, since a package schema cannot say "a number or a range") is
    the stack file's `nodes: {min, max}`."""
    if raw.get("nodes_range") is None:
        return {key: value for key, value in raw.items() if key != "nodes_range"}
    if raw.get("nodes") is not None:
        problems.append(Problem(f"{where}nodes_range", raw["nodes_range"],
                                f"either `{where}nodes` (a fixed count) or `{where}nodes_range` (an elastic group), not both"))
        return {key: value for key, value in raw.items() if key != "nodes_range"}
    return {**{key: value for key, value in raw.items() if key != "nodes_range"}, "nodes": raw["nodes_range"]}


def cluster_request(args: Mapping[str, Any], cloud: str) -> ClusterRequest:
    """Parses `args` for `cloud`; raises `ClusterRefused` with every problem found in the known values.

    A parsed `ClusterSpec` is accepted too (its `cloud` must be the component's), as the components took before."""
    if isinstance(args, ClusterSpec):
        args = args.model_dump(mode="json", exclude_none=True)
    if not isinstance(args, Mapping):
        raise ClusterRefused([Problem("args", args, "expected a GpuClusterArgs mapping (region, nodes, accelerator, ...)")])
    problems: list[Problem] = []
    if "cloud" in args and args["cloud"] != cloud:
        problems.append(Problem("cloud", args["cloud"], f"expected {cloud!r} (or nothing) for this component"))
    raw = {key: value for key, value in args.items() if value is not None}
    raw = {**_range_as_nodes(raw, "", problems), "cloud": cloud}
    if isinstance(raw.get("node_groups"), Mapping):
        raw["node_groups"] = {group: _range_as_nodes(value, f"node_groups.{group}.", problems)
                              if isinstance(value, Mapping) else value for group, value in raw["node_groups"].items()}
    deferred: dict[str, pulumi.Output] = {}
    for path, value in list(_walk(raw)):
        if _is_unknown(value):
            problems += _defer(raw, path, value, cloud, deferred)
    try:
        spec = parse_cluster_spec(raw)
    except SpecError as err:
        raise ClusterRefused([*problems, *err.problems]) from None
    if problems:
        raise ClusterRefused(problems)
    return ClusterRequest(cloud, raw, spec, deferred)


def _defer(raw: dict, path: str, value: Any, cloud: str, deferred: dict) -> list[Problem]:
    pattern = "tags.*" if path.startswith("tags.") else re.sub(r"\[\d+\]", "[*]", path)
    stand_in = STAND_INS.get(pattern, {}).get(cloud)
    if stand_in is None:
        clouds = sorted(STAND_INS.get(pattern, {}))
        where = f"may come from another resource only on {' and '.join(clouds)}" if clouds else "may not come from another resource"
        _delete(raw, path)  # one message for it: the spec check does not see the Output
        return [Problem(path, "an unresolved Output", f"expected a plain value: on {cloud} it decides what is declared "
                        f"({path} {where})")]
    deferred[path] = pulumi.Output.from_input(value)
    _set(raw, path, stand_in)
    return []


def _walk(value: Any, path: str = ""):
    """(dotted path, value) of every leaf and every unresolved value in `value`."""
    if _is_unknown(value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")


def _is_unknown(value: Any) -> bool:
    return isinstance(value, pulumi.Output) or inspect.isawaitable(value)


def _parts(path: str) -> list:
    """`a.b[2].c` -> ["a", "b", 2, "c"]; a tag key (after `tags.`) is one part, whatever it holds."""
    if path.startswith("tags."):
        return ["tags", path[len("tags."):]]
    parts: list = []
    for part in path.split("."):
        parts.append(part.split("[", 1)[0])
        parts += [int(i) for i in re.findall(r"\[(\d+)\]", part)]
    return parts


def _delete(raw: dict, path: str) -> None:
    *parents, last = _parts(path)
    target: Any = raw
    for part in parents:
        if isinstance(target, dict):
            target = target.get(part, {})
        elif isinstance(target, list) and isinstance(part, int) and part < len(target):
            target = target[part]
        else:
            return
    if isinstance(target, dict):
        target.pop(last, None)
    elif isinstance(target, list) and isinstance(last, int) and last < len(target):
        target.pop(last)


def _set(raw: dict, path: str, value: Any) -> None:
    *parents, last = _parts(path)
    target: Any = raw
    for part in parents:
        target = target[part] if isinstance(part, int) else target.setdefault(part, {})
    target[last] = value
