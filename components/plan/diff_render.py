"""Views of a `PlanDiff`: a PR comment in markdown (under GitHub's 65,536-character limit), text, and JSON."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from .diff import USER_DATA_NOTE, PlanDiff

COMMENT_LIMIT = 65_000  # GitHub refuses comments over 65,536 characters
USER_DATA_LIMIT = 12_000
VALUE_LIMIT = 120


def diff_json(diff: PlanDiff) -> str:
    document = {
        "base_stack": diff.base_stack, "head_stack": diff.head_stack, "has_changes": diff.has_changes,
        "added": [{"urn": r["urn"], "type": r["type"]} for r in diff.added],
        "removed": [{"urn": r["urn"], "type": r["type"]} for r in diff.removed],
        "changed": [asdict(c) for c in diff.changed],
        "replaced": [c.urn for c in diff.replaced],
        "outputs": [asdict(c) for c in diff.outputs],
        "cost": diff.cost,
        "warnings": {"added": diff.warnings_added, "removed": diff.warnings_removed},
        "user_data": diff.user_data,
        "policy": {"head": [asdict(v) for v in diff.policy_head], "new": [asdict(v) for v in diff.policy_new()],
                   "fixed": [asdict(v) for v in diff.policy_fixed()]},
    }
    return json.dumps(document, indent=2, sort_keys=True, default=str)


def summary_rows(diff: PlanDiff) -> list[tuple[str, str]]:
    unknown = [c for c in diff.changed if c.unknown_replace]
    rows = [("added", str(len(diff.added))), ("removed", str(len(diff.removed))),
            ("changed", str(len(diff.changed))), ("**replaced**", str(len(diff.replaced)))]
    if unknown:
        rows.append(("changed, replacement unknown", str(len(unknown))))
    rows += [("cost $/h", _money_delta(diff.cost.get("usd_per_hour"))),
             ("cost $/month", _money_delta(diff.cost.get("usd_per_month"))),
             ("node user data", f"changed on {len(diff.user_data)} node group(s)" if diff.user_data else "no change"),
             ("outputs changed", str(len(diff.outputs))),
             ("warnings", f"+{len(diff.warnings_added)} / -{len(diff.warnings_removed)}"),
             ("policy (head)", _policy_cell(diff))]
    return rows


def diff_markdown(diff: PlanDiff, title: str = "", limit: int = COMMENT_LIMIT) -> str:
    """The PR comment: a summary table first, details folded; never longer than `limit` characters."""
    title = title or f"gpufleet diff `{diff.base_stack}` → `{diff.head_stack}`"
    lines = [f"### {title}", ""]
    if not diff.has_changes:
        lines.append("No change to resources, outputs, user data or warnings.")
    lines += ["", "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in summary_rows(diff)] + [""]
    if diff.replaced:
        lines.append("> [!WARNING]")
        lines.append(f"> {len(diff.replaced)} resource(s) will be **REPLACED** (deleted and created again):")
        lines += [f"> - `{c.name}` ({c.type}): {c.replace}" for c in diff.replaced]
        lines.append("")
    unknown = [c for c in diff.changed if c.unknown_replace]
    if unknown:
        lines.append("gpufleet has no replace-on-change data for: " + ", ".join(sorted({c.type for c in unknown}))
                     + "; check the provider's documentation or run `pulumi preview`.")
        lines.append("")
    if diff.user_data:
        lines += [f"**Node user data changes** on {', '.join(f'`{n}`' for n in diff.user_data)}. {USER_DATA_NOTE}", ""]
    sections = [_resources_section(diff), _outputs_section(diff), _warnings_section(diff), _policy_section(diff)]
    body = "\n".join(lines + [s for s in sections if s])
    user_data = _user_data_section(diff, limit - len(body) - 200)
    text = body + ("\n" + user_data if user_data else "")
    if len(text) > limit:
        text = text[:limit - 120] + "\n\n(truncated to fit a PR comment; run `gpufleet diff` locally)\n"
    return text


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>\n"


def _resources_section(diff: PlanDiff) -> str:
    rows = [f"| added | `{r['name']}` | {r['type']} | |" for r in diff.added]
    rows += [f"| removed | `{r['name']}` | {r['type']} | |" for r in diff.removed]
    for change in diff.changed:
        kind = "**replace**" if change.replace else ("update (replace unknown)" if change.unknown_replace else "update")
        props = "<br>".join(f"{'⚠️ ' if p.replaces else ''}`{p.path}`: {_short(p.before)} → {_short(p.after)}"
                            for p in change.changes[:20])
        if len(change.changes) > 20:
            props += f"<br>… {len(change.changes) - 20} more"
        if change.replace and not change.changes:
            props = change.replace
        rows.append(f"| {kind} | `{change.name}` | {change.type} | {props} |")
    if not rows:
        return ""
    table = "| action | resource | type | properties |\n|---|---|---|---|\n" + "\n".join(rows)
    return _details(f"Resources ({len(rows)})", table)


def _outputs_section(diff: PlanDiff) -> str:
    if not diff.outputs:
        return ""
    rows = "\n".join(f"| `{c.path}` | {_short(c.before)} | {_short(c.after)} |" for c in diff.outputs)
    return _details(f"Stack outputs ({len(diff.outputs)})", "| output | base | head |\n|---|---|---|\n" + rows)


def _warnings_section(diff: PlanDiff) -> str:
    if not (diff.warnings_added or diff.warnings_removed):
        return ""
    lines = [f"- new: {w}" for w in diff.warnings_added] + [f"- removed: {w}" for w in diff.warnings_removed]
    return _details("Warnings", "\n".join(lines))


def _policy_section(diff: PlanDiff) -> str:
    if not (diff.policy_head or diff.policy_base):
        return ""
    new = {(v.policy, v.urn) for v in diff.policy_new()}
    lines = [f"- {'**new** ' if (v.policy, v.urn) in new else ''}{v.level} `{v.policy}` `{v.urn}`: {v.why}; "
             f"fix: {v.fix}" for v in diff.policy_head]
    lines += [f"- fixed: `{v.policy}` `{v.urn}`" for v in diff.policy_fixed()]
    return _details(f"Policy ({len(diff.policy_head)} violation(s) in head)", "\n".join(lines))


def _user_data_section(diff: PlanDiff, room: int) -> str:
    parts = []
    for name, text in diff.user_data.items():
        limit = max(0, min(USER_DATA_LIMIT, room // max(1, len(diff.user_data)) - 300))
        shown = text if len(text) <= limit else (
            text[:limit] + f"\n... truncated: {len(text) - limit} more characters; run `gpufleet diff` locally or "
            "`gpufleet plan STACK --out DIR` on each side\n")
        parts.append(_details(f"User data diff: <code>{name}</code>", "```diff\n" + shown + "```"))
    return "\n".join(parts)


def _policy_cell(diff: PlanDiff) -> str:
    mandatory = sum(1 for v in diff.policy_head if v.level == "mandatory")
    advisory = len(diff.policy_head) - mandatory
    new = len(diff.policy_new())
    return f"{mandatory} mandatory, {advisory} advisory ({new} new)" if diff.policy_head else "clean"


def _money_delta(entry: dict | None) -> str:
    if not entry:
        return "unknown"
    base, head, delta = entry.get("base"), entry.get("head"), entry.get("delta")
    if delta is None:
        return f"{_money(base)} → {_money(head)}"
    sign = "+" if delta > 0 else ("−" if delta < 0 else "±")
    return f"{_money(base)} → {_money(head)} ({sign}${abs(delta):,.2f})"


def _money(value: Any) -> str:
    return f"${value:,.2f}" if isinstance(value, (int, float)) else "unknown"


def _short(value: Any) -> str:
    if value is None:
        return "∅"
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    text = text.replace("|", "\\|").replace("\n", " ")
    return f"`{text if len(text) <= VALUE_LIMIT else text[:VALUE_LIMIT - 1] + '…'}`"


def diff_text(diff: PlanDiff) -> str:
    """Plain terminal view: the summary, then each change on one line."""
    lines = [f"gpufleet diff {diff.base_stack} -> {diff.head_stack}"]
    lines += [f"  {k.strip('*')}: {v}" for k, v in summary_rows(diff)]
    for r in diff.added:
        lines.append(f"+ {r['name']} ({r['type']})")
    for r in diff.removed:
        lines.append(f"- {r['name']} ({r['type']})")
    for c in diff.changed:
        mark = "REPLACE" if c.replace else "~"
        lines.append(f"{mark} {c.name} ({c.type}){': ' + c.replace if c.replace else ''}")
        lines += [f"    {p.path}: {_plain(p.before)} -> {_plain(p.after)}"
                  + ("  (forces replacement)" if p.replaces else "")
                  for p in c.changes]
    for c in diff.outputs:
        lines.append(f"output {c.path}: {_plain(c.before)} -> {_plain(c.after)}")
    lines += [f"new warning: {w}" for w in diff.warnings_added]
    lines += [f"removed warning: {w}" for w in diff.warnings_removed]
    if diff.user_data:
        lines.append(USER_DATA_NOTE)
        for text in diff.user_data.values():
            lines.append(text.rstrip("\n"))
    lines += [v.line() for v in diff.policy_head]
    return "\n".join(lines)


def _plain(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= VALUE_LIMIT else text[:VALUE_LIMIT - 3] + "..."
