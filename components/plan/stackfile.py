"""Reads stacks/Pulumi.<stack>.yaml and applies `--set path=value` overrides inside `gpufleet:cluster`.

Every way a stack file can be wrong is one `SpecError` (exit 2): a YAML syntax error or a repeated key (with its
line), a document or `config:` that is not a mapping, a misspelt `gpufleet:cluster` (with the likely key), and a
`--set` into a value that is not a mapping.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from ..spec.errors import Problem, SpecError
from ..spec.raw import expand_shorthands
from ..spec.source import load_yaml
from .project import RUNNING_COMMAND, find_project

CLUSTER_KEY = "gpufleet:cluster"


def stack_names(stacks_dir: Path | None = None) -> list[str]:
    stacks_dir = stacks_dir or find_project().stacks_dir
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in stacks_dir.glob("Pulumi.*.yaml"))


def stack_file(stack: str, stacks_dir: Path | None = None) -> Path:
    """<stackConfigDir>/Pulumi.<stack>.yaml of the Pulumi project around the current directory (or `stacks_dir`),
    or `stack` itself when it is a path to a .yaml file."""
    stacks_dir = stacks_dir or find_project().stacks_dir
    if stack.endswith((".yaml", ".yml")) and Path(stack).is_file():
        return Path(stack)
    path = stacks_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise SpecError([Problem("stack", stack, f"expected one of {', '.join(stack_names(stacks_dir)) or 'none'} "
                                 f"(no {_shown_path(path)}), or a path to a stack file")], root=RUNNING_COMMAND.get())
    return path


def stack_name(stack: str) -> str:
    """The stack's name: `aws-train` for `aws-train` and for `some/dir/Pulumi.aws-train.yaml`."""
    name = Path(stack).name
    if name.endswith((".yaml", ".yml")):
        name = name.rsplit(".", 1)[0]
        name = name[len("Pulumi."):] if name.startswith("Pulumi.") else name
    return name or "stack"


def read_stack_config(stack: str, stacks_dir: Path | None = None) -> dict[str, Any]:
    """The stack file's `config:` mapping, values as written (the cluster spec stays a mapping)."""
    path = stack_file(stack, stacks_dir)
    source = _shown_path(path)
    document = load_yaml(path.read_text(errors="replace"), source)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise SpecError([Problem(source, _kind(document), "expected a mapping with a `config:` key, as "
                                 "stacks/Pulumi.aws-dev.yaml has")], root=RUNNING_COMMAND.get())
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise SpecError([Problem(f"{source}: config", _kind(config), "expected a mapping of `namespace:key: value` "
                                 "entries, e.g. `gpufleet:cluster:` with the spec under it")], root=RUNNING_COMMAND.get())
    values = {str(key): (value["value"] if isinstance(value, dict) and set(value) == {"value"} else value)
              for key, value in config.items()}
    misspelt = _misspelt_cluster_keys(values)
    if misspelt:
        raise SpecError([Problem(f"{source}: config.{key}", key, f"unknown key; did you mean `{CLUSTER_KEY}`?")
                         for key in misspelt], root=RUNNING_COMMAND.get())
    return values


def apply_overrides(config: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """`nodes=64` or `market.type=spot`: a dotted path inside `gpufleet:cluster`; the value is read as YAML."""
    cluster = config.get(CLUSTER_KEY)
    if not overrides:
        return config
    if cluster is None:
        cluster = {}
    if not isinstance(cluster, dict):
        raise SpecError([Problem(CLUSTER_KEY, _kind(cluster), "expected a mapping (cloud, region, nodes, ...), so "
                                 "`--set` has somewhere to write")], root=RUNNING_COMMAND.get())
    cluster = expand_shorthands(_copy(cluster))
    for item in overrides:
        path, sep, text = item.partition("=")
        parts = path.split(".")
        if not sep or not all(parts):
            raise SpecError([Problem("--set", item, "expected PATH=VALUE, e.g. `--set nodes=64`")], root=RUNNING_COMMAND.get())
        value = load_yaml(text, f"--set {path}")
        _set_path(cluster, parts, value, item)
    return {**config, CLUSTER_KEY: cluster}


def _set_path(target: dict, parts: list[str], value: Any, item: str) -> None:
    for depth, part in enumerate(parts[:-1]):
        child = target.setdefault(part, {})
        if not isinstance(child, dict):
            where = ".".join(parts[:depth + 1])
            raise SpecError([Problem("--set", item, f"`{where}` holds the value {_kind(child)!r}, not a mapping; "
                                     f"set `{where}` itself")], root=RUNNING_COMMAND.get())
        target = child
    target[parts[-1]] = value


def _misspelt_cluster_keys(config: dict[str, Any]) -> list[str]:
    """`gpufleet:clusters` or `gpufleet:Cluster` beside (or instead of) `gpufleet:cluster`."""
    others = [key for key in config if key != CLUSTER_KEY]
    return [key for key in others if difflib.get_close_matches(key.lower(), [CLUSTER_KEY], n=1, cutoff=0.8)]


def _kind(value: Any) -> Any:
    """The value for a message: scalars as written, containers by kind."""
    if isinstance(value, list):
        return "(a list)"
    if isinstance(value, dict):
        return "(a mapping)"
    return value if isinstance(value, (str, int, float, bool)) or value is None else f"({type(value).__name__})"


def _shown_path(path: Path) -> str:
    """The path as the user would type it from the current directory."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
