"""Compares two offline plans (`gpufleet plan --json` documents): what a change would do to the infrastructure.

Pure data in, data out: the inputs are two plan documents, the result a `PlanDiff` that the markdown, terminal and
JSON views render. Replacements come from the per-type replace-on-change data in `replace_data`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from .mocks import PLACEHOLDER_SUFFIX
from .replace_data import has_cloud_state, replace_facts
from .userdata import USER_DATA_KEYS, NamedInputs, node_user_data

MISSING = object()
USER_DATA_NOTE = ("Existing nodes keep their old user data until they are replaced (cloud-init runs at first "
                  "boot): new nodes, repairs and spot replacements boot with the new user data.")


@dataclass(frozen=True)
class PropertyChange:
    path: str
    before: Any
    after: Any
    replaces: bool


@dataclass
class ResourceChange:
    urn: str
    type: str
    name: str
    changes: list[PropertyChange]
    replace: str = ""  # why it is replaced ("" when updated in place)
    unknown_replace: bool = False  # no replace-on-change data for its type
    note: str = ""


@dataclass
class PlanDiff:
    base_stack: str
    head_stack: str
    added: list[dict] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)
    changed: list[ResourceChange] = field(default_factory=list)
    outputs: list[PropertyChange] = field(default_factory=list)
    cost: dict[str, Any] = field(default_factory=dict)
    warnings_added: list[str] = field(default_factory=list)
    warnings_removed: list[str] = field(default_factory=list)
    user_data: dict[str, str] = field(default_factory=dict)  # resource name -> unified diff
    policy_base: list = field(default_factory=list)
    policy_head: list = field(default_factory=list)

    @property
    def replaced(self) -> list[ResourceChange]:
        return [c for c in self.changed if c.replace]

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.outputs or self.user_data
                    or self.warnings_added or self.warnings_removed)

    def policy_new(self) -> list:
        """Violations in HEAD that BASE did not have (by policy and URN)."""
        seen = {(v.policy, v.urn) for v in self.policy_base}
        return [v for v in self.policy_head if (v.policy, v.urn) not in seen]

    def policy_fixed(self) -> list:
        seen = {(v.policy, v.urn) for v in self.policy_head}
        return [v for v in self.policy_base if (v.policy, v.urn) not in seen]


def diff_plans(base: dict, head: dict) -> PlanDiff:
    """What changes from `base` to `head`; both are plan documents (`{"stack", "resources", "outputs"}`)."""
    from ..policy.engine import check_plan  # the rules import nothing from plan; imported late to keep it so

    result = PlanDiff(base_stack=base.get("stack", ""), head_stack=head.get("stack", ""))
    before = {r["urn"]: r for r in base["resources"]}
    after = {r["urn"]: r for r in head["resources"]}
    result.added = [after[u] for u in sorted(after.keys() - before.keys())]
    result.removed = [before[u] for u in sorted(before.keys() - after.keys())]
    for urn in sorted(before.keys() & after.keys()):
        change = _resource_change(before[urn], after[urn])
        if change:
            result.changed.append(change)
    _propagate_replacements(result, after)
    base_out, head_out = base.get("outputs") or {}, head.get("outputs") or {}
    result.outputs = [c for c in _property_changes(_without(base_out), _without(head_out), "")]
    result.cost = _cost_delta(base_out, head_out)
    base_warn, head_warn = base_out.get("warnings") or [], head_out.get("warnings") or []
    result.warnings_added = [w for w in head_warn if w not in base_warn]
    result.warnings_removed = [w for w in base_warn if w not in head_warn]
    result.user_data = user_data_diffs(base["resources"], head["resources"])
    result.policy_base = check_plan(base)
    result.policy_head = check_plan(head)
    return result


def user_data_diffs(base: list[dict], head: list[dict]) -> dict[str, str]:
    """{resource name: unified diff of the decoded user data} for each node group whose user data changed."""
    old = node_user_data([NamedInputs(r["name"], r["inputs"]) for r in base])
    new = node_user_data([NamedInputs(r["name"], r["inputs"]) for r in head])
    diffs = {}
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name, ""), new.get(name, "")
        if a != b:
            diffs[name] = "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True),
                                                       f"base/{name}.user-data", f"head/{name}.user-data"))
    return diffs


def _resource_change(old: dict, new: dict) -> ResourceChange | None:
    changes = list(_property_changes(old.get("inputs") or {}, new.get("inputs") or {}, ""))
    if not changes:
        return None
    facts = replace_facts(new["type"])
    change = ResourceChange(urn=new["urn"], type=new["type"], name=new["name"], changes=[])
    if facts is None:
        change.unknown_replace = has_cloud_state(new["type"])
        change.changes = changes
    else:
        change.changes = [PropertyChange(c.path, c.before, c.after, facts.replaces(_top(c.path))) for c in changes]
        replacing = sorted({_top(c.path) for c in change.changes if c.replaces})
        if replacing:
            change.replace = f"{', '.join(replacing)} cannot change in place"
        change.note = facts.note
    return change


def _propagate_replacements(result: PlanDiff, resources: dict[str, dict]) -> None:
    """A replaced resource gets a new id: whoever holds that id in a replace-on-change input is replaced too.

    Offline ids are `<name>-id` placeholders that stay equal across plans, so this is found from the references.
    """
    changed = {c.urn: c for c in result.changed}
    replaced_ids = {f"{c.name}{PLACEHOLDER_SUFFIX}": c.name for c in result.changed if c.replace}
    while replaced_ids:
        newly = {}
        for urn, resource in resources.items():
            facts = replace_facts(resource["type"])
            if facts is None or (urn in changed and changed[urn].replace):
                continue
            for prop, value in (resource.get("inputs") or {}).items():
                hit = next((name for ref, name in replaced_ids.items() if _mentions(value, ref)), None)
                if hit and facts.replaces(prop):
                    change = changed.get(urn)
                    if change is None:
                        change = ResourceChange(urn=urn, type=resource["type"], name=resource["name"], changes=[],
                                                note=facts.note)
                        changed[urn] = change
                        result.changed.append(change)
                    change.replace = f"{prop} refers to {hit}, which is replaced"
                    newly[f"{resource['name']}{PLACEHOLDER_SUFFIX}"] = resource["name"]
                    break
        replaced_ids = newly
    result.changed.sort(key=lambda c: c.urn)


def _mentions(value: Any, ref: str) -> bool:
    if isinstance(value, str):
        return value == ref
    if isinstance(value, dict):
        return any(_mentions(v, ref) for v in value.values())
    if isinstance(value, list):
        return any(_mentions(v, ref) for v in value)
    return False


def _property_changes(old: Any, new: Any, path: str):
    """Leaf-level changes as dotted paths (`tags.Name`, `ingress[0].fromPort`); user data is one opaque leaf."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys()):
            if key.startswith("__"):
                continue
            sub = f"{path}.{key}" if path else key
            a, b = old.get(key, MISSING), new.get(key, MISSING)
            if key in USER_DATA_KEYS and a != b:
                yield PropertyChange(sub, "(user data)" if a is not MISSING else None,
                                     "(user data, see below)" if b is not MISSING else None, False)
            elif a is MISSING or b is MISSING:
                yield PropertyChange(sub, None if a is MISSING else a, None if b is MISSING else b, False)
            else:
                yield from _property_changes(a, b, sub)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _property_changes(a, b, f"{path}[{index}]")
    elif old != new:
        yield PropertyChange(path, old, new, False)


def _top(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]


def _without(outputs: dict) -> dict:
    return {k: v for k, v in outputs.items() if k not in ("warnings", "cost", "job_cost")}


def _cost_delta(old: dict, new: dict) -> dict[str, Any]:
    out = {}
    for key, label in (("estimated_usd_per_hour", "usd_per_hour"), ("estimated_usd_per_month", "usd_per_month")):
        a, b = old.get(key), new.get(key)
        out[label] = {"base": a, "head": b,
                      "delta": round(b - a, 2) if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None}
    out["market"] = {"base": old.get("market"), "head": new.get("market")}
    return out
