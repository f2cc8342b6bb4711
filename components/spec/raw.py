"""The structural check every raw spec passes before any model or rule sees it (issue 10, item 1).

A stack file or `--set` is YAML, so a value can be anything YAML builds: dates, sets, bytes, huge integers,
`.inf`, nesting thousands deep, lists of millions. Pydantic would turn some of those into tracebacks (a date that
is not JSON serializable, an integer over Python's 4,300-digit string limit, recursion) and coerce others silently.
`raw_problems` walks the value once, without recursion, and refuses anything that is not a bounded tree of
mappings with string keys, lists, strings, finite numbers, booleans and nulls. Nothing else runs until it passes.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any

from .errors import Problem

# Bounds far above any real spec (it is four levels deep, and AWS allows 50 tags), far below anything that hurts.
MAX_DEPTH = 12
MAX_ITEMS = 256
MAX_STRING_CHARS = 1 << 20  # user data is measured later, against each cloud's own limit
MAX_INT = 2**63 - 1
# `market: spot` is short for `market: {type: spot}`; `--set market.type=...` expands it first.
SHORTHANDS = {"market": "type"}
SCALARS = (str, bool, int, float, type(None))


def raw_problems(raw: Any, root: str = "") -> list[Problem]:
    """Every structural problem in `raw`, each at its field path; empty when the tree is safe to validate."""
    problems: list[Problem] = []
    pending: list[tuple[str, Any, int]] = [(root, raw, 0)]
    while pending:
        path, value, depth = pending.pop()
        if depth > MAX_DEPTH:
            problems.append(Problem(path, "(nested deeper)", f"nested more than {MAX_DEPTH} levels; the spec is a "
                                    "few levels deep, see README's spec reference"))
            continue
        if isinstance(value, dict):
            problems += _size_problem(path, value, "keys")
            for key, child in list(value.items())[:MAX_ITEMS]:
                if not isinstance(key, str):
                    problems.append(Problem(_join(path, str(key)[:40]), _shown(key), "expected a text key; quote it"))
                    continue
                pending.append((_join(path, key), child, depth + 1))
        elif isinstance(value, list):
            problems += _size_problem(path, value, "items")
            pending.extend((f"{path}[{i}]", child, depth + 1) for i, child in enumerate(value[:MAX_ITEMS]))
        else:
            problems += scalar_problems(path, value)
    return sorted(problems, key=lambda p: p.path)


def scalar_problems(path: str, value: Any) -> list[Problem]:
    """A leaf value: a YAML scalar that means the same in JSON, within bounds."""
    if isinstance(value, (datetime, date)):
        return [Problem(path, value.isoformat(), f"YAML read this as a date; quote it to pass text: "
                        f"'{value.isoformat()}'")]
    if isinstance(value, (bytes, bytearray)):
        return [Problem(path, "(binary data)", "expected text, a number or true/false, not a YAML !!binary value")]
    if isinstance(value, (set, frozenset, tuple)):
        return [Problem(path, "(a YAML set or tuple)", "expected a list written as [a, b] or with `- ` items")]
    if not isinstance(value, SCALARS):
        return [Problem(path, f"(a {type(value).__name__})", "expected text, a number, true/false, a list or a "
                        "mapping")]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        return [Problem(path, "(an integer of more than 18 digits)", f"expected a number up to {MAX_INT}")]
    if isinstance(value, float) and not math.isfinite(value):
        return [Problem(path, str(value), "expected a finite number (.inf and .nan are not prices or sizes)")]
    if isinstance(value, str) and len(value) > MAX_STRING_CHARS:
        return [Problem(path, f"({len(value)} characters)", f"expected at most {MAX_STRING_CHARS} characters")]
    return []


def expand_shorthands(cluster: dict[str, Any]) -> dict[str, Any]:
    """`{market: spot}` -> `{market: {type: spot}}`, so a `--set market.type=...` lands inside the mapping; the
    same in every node group (`node_groups.<name>.market`)."""
    expanded = dict(cluster)
    for key, inner in SHORTHANDS.items():
        if isinstance(expanded.get(key), str):
            expanded[key] = {inner: expanded[key]}
    groups = expanded.get("node_groups")
    if isinstance(groups, dict):
        expanded["node_groups"] = {name: expand_shorthands(group) if isinstance(group, dict) else group
                                   for name, group in groups.items()}
    return expanded


def _size_problem(path: str, value: dict | list, what: str) -> list[Problem]:
    if len(value) <= MAX_ITEMS:
        return []
    return [Problem(path or "gpufleet:cluster", f"({len(value)} {what})", f"expected at most {MAX_ITEMS} {what}")]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _shown(key: Any) -> str:
    return key.isoformat() if isinstance(key, (date, datetime)) else f"({type(key).__name__} key {str(key)[:40]})"
