"""Reads the project's Pulumi.<stack>.yaml (in its `stackConfigDir`) and applies `--set path=value` overrides
inside `gpufleet:cluster`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml

from ..spec.errors import Problem, SpecError
from .project import find_project

CLUSTER_KEY = "gpufleet:cluster"


def stack_names(stacks_dir: Optional[Path] = None) -> list[str]:
    stacks_dir = stacks_dir or find_project().stacks_dir
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in stacks_dir.glob("Pulumi.*.yaml"))


def read_stack_config(stack: str, stacks_dir: Optional[Path] = None) -> dict[str, Any]:
    """The stack file's `config:` mapping, values as written (the cluster spec stays a mapping).

    `stacks_dir`: default, the `stackConfigDir` of the Pulumi project around the current directory."""
    stacks_dir = stacks_dir or find_project().stacks_dir
    path = stacks_dir / f"Pulumi.{stack}.yaml"
    if not path.exists():
        raise SpecError([Problem("stack", stack, f"expected one of {', '.join(stack_names(stacks_dir)) or 'none'} "
                                 f"(no {path})")], root="gpufleet plan")
    document = yaml.safe_load(path.read_text()) or {}
    config = document.get("config") or {}
    return {key: (value["value"] if isinstance(value, dict) and set(value) == {"value"} else value)
            for key, value in config.items()}


def apply_overrides(config: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """`nodes=64` or `market.type=spot`: a dotted path inside `gpufleet:cluster`; the value is read as YAML."""
    cluster = _copy(config.get(CLUSTER_KEY) or {})
    for item in overrides:
        path, sep, text = item.partition("=")
        if not sep or not path:
            raise SpecError([Problem("--set", item, "expected PATH=VALUE, e.g. `--set nodes=64`")],
                            root="gpufleet plan")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            raise SpecError([Problem(f"--set {path}", text, "expected a YAML value")], root="gpufleet plan") from None
        _set_path(cluster, path.split("."), value, item)
    return {**config, CLUSTER_KEY: cluster}


def _set_path(target: dict, parts: list[str], value: Any, item: str) -> None:
    for part in parts[:-1]:
        child = target.setdefault(part, {})
        if not isinstance(child, dict):
            raise SpecError([Problem("--set", item, f"`{part}` holds a value, not a mapping")], root="gpufleet plan")
        target = child
    target[parts[-1]] = value


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
