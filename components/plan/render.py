"""Terminal and JSON views of a plan. Both are deterministic: same stack, same bytes."""

from __future__ import annotations

import json
from collections import Counter
from functools import partial
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from ..catalog.cost import cost_table_lines
from ..groups.cost import group_cost_lines, is_group_cost
from ..serving import serving_cost_lines
from ..storage.cost import storage_cost_lines
from .mocks import DeclaredResource
from .runner import PlanResult

HIDDEN_KEYS = {"tags", "userData", "customData", "tagSpecifications", "labels", "description", "policy",
               "assumeRolePolicy", "metadata", "userDataBase64"}
KIND_KEYS = ("interfaceType", "nicType")
MAX_OUTPUT_TEXT = 400  # longer outputs are summarized by size in the table
MAX_TEXT = 60


def plan_json(result: PlanResult) -> str:
    """`{"stack", "resources": [{"urn", "type", "name", "parent", "inputs"}], "outputs"}`, keys sorted."""
    document = {
        "stack": result.stack,
        "resources": [{"urn": r.urn, "type": r.type, "name": r.name, "parent": r.parent, "inputs": r.inputs}
                      for r in result.resources],
        "outputs": result.outputs,
    }
    return json.dumps(document, indent=2, sort_keys=True, default=str)


def print_plan(result: PlanResult, console: Console, notes: list[str]) -> None:
    # Without a color system (not a terminal, no FORCE_COLOR) rich drops every style, so highlighting numbers and
    # strings only costs time (about 3 ms of a plan): the same bytes without it.
    show = partial(console.print, highlight=False) if console.color_system is None else console.print
    show(f"[bold]gpufleet plan[/bold] for stack [cyan]{result.stack}[/cyan]: "
         f"{len(result.resources)} resources (offline, under Pulumi mocks: ids and computed values are "
         "placeholders, nothing was created)")
    show(_tree(result.resources))
    show(_outputs_table(result.outputs))
    if result.outputs.get("cost"):
        show("[bold]Cost[/bold] (catalog prices, USD)")
        rows = result.outputs["cost"]
        show(escape("\n".join(group_cost_lines(rows) if is_group_cost(rows) else cost_table_lines(rows))))
        show(escape("\n".join(storage_cost_lines(result.outputs))))
    if result.outputs.get("job_cost"):
        from ..bench.mlperf import job_cost_lines
        show(escape("\n".join(job_cost_lines(result.outputs["job_cost"]))))
    if result.outputs.get("inference_cost"):
        show(escape("\n".join(serving_cost_lines(result.outputs["inference_cost"]))))
    warnings = [*(result.outputs.get("warnings") or []), *(result.outputs.get("inference_warnings") or [])]
    for note in notes + [f"warning: {w}" for w in warnings]:
        show(f"[yellow]{escape(note)}[/yellow]")


def summarize_inputs(inputs: dict[str, Any], prefix: str = "") -> str:
    """The key properties of one resource: scalars and short lists, nested mappings as dotted paths."""
    parts = []
    for key in sorted(inputs):
        if key in HIDDEN_KEYS or key.startswith("__"):
            continue
        value = inputs[key]
        if isinstance(value, dict):
            inner = summarize_inputs(value, f"{prefix}{key}.")
            parts += [inner] if inner else []
            continue
        text = _summarize(value)
        if text:
            parts.append(f"{prefix}{key}={text}")
    return " ".join(parts)


def _summarize(value: Any) -> str:
    if isinstance(value, (str, int, float, bool)):
        text = str(value)
        return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 3] + "..."
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for kind in KIND_KEYS:
            if all(kind in v for v in value):
                counts = Counter(v[kind] for v in value)
                return "[" + ", ".join(f"{n}x {k}" for k, n in sorted(counts.items())) + "]"
        if len(value) == 1:
            return "[" + summarize_inputs(value[0]) + "]"
        return f"[{len(value)} items]"
    if isinstance(value, list) and value:
        return "[" + ",".join(_summarize(v) for v in value[:4]) + (",..." if len(value) > 4 else "") + "]"
    return ""


def _tree(resources: list[DeclaredResource]) -> Tree:
    root = Tree("[bold]stack[/bold]")
    nodes: dict[str, Tree] = {}
    for resource in resources:
        label = f"[green]{resource.name}[/green] [dim]{resource.type}[/dim]"
        summary = summarize_inputs(resource.inputs)
        nodes[resource.urn] = Tree(label + (f"\n[dim]{escape(summary)}[/dim]" if summary else ""))
    for resource in resources:
        nodes.get(resource.parent, root).children.append(nodes[resource.urn])
    return root


def _outputs_table(outputs: dict[str, Any]) -> Table:
    table = Table(title="Stack outputs", show_lines=False)
    table.add_column("output")
    table.add_column("value", overflow="fold")
    for key in sorted(outputs):
        if key in ("warnings", "cost", "job_cost"):
            continue
        table.add_row(key, escape(_output_text(outputs[key])))
    return table


def _output_text(value: Any) -> str:
    """An output as the table shows it: whole when short; a long text (a dashboard, the alert rules) by its size,
    since `--json` carries every value in full."""
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    if len(text) <= MAX_OUTPUT_TEXT:
        return text
    if isinstance(value, dict):
        return "; ".join(f"{name}: {_size(item)}" for name, item in sorted(value.items())) + " (--json shows them)"
    if isinstance(value, list):
        return f"{len(value)} items (--json shows them)"
    return f"{_size(value)} (--json shows it)"


def _size(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"{text.count(chr(10)) + 1:,} lines, {len(text.encode()):,} bytes"
