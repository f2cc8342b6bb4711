"""Runs every rule over a plan document (`gpufleet plan --json`) or a list of resources."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .model import MANDATORY, Resource, Rule, Violation
from .rules import RULES


class BadPlan(ValueError):
    """The document is not a gpufleet plan (`{"resources": [{"urn", "type", "inputs"}]}`)."""


def plan_resources(document: Any) -> list[Resource]:
    if not isinstance(document, dict) or not isinstance(document.get("resources"), list):
        raise BadPlan("expected a plan document from `gpufleet plan --json` (an object with a `resources` list)")
    found = []
    for index, item in enumerate(document["resources"]):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str) or not isinstance(
                item.get("inputs", {}), dict):
            raise BadPlan(f"resources[{index}] is not a resource (expected type, urn, name, inputs)")
        found.append(Resource(item["type"], item.get("inputs") or {}, str(item.get("urn", "")),
                              str(item.get("name", ""))))
    return found


def check_resources(resources: list[Resource], rules: Iterable[Rule] = RULES,
                    config: dict[str, dict] | None = None) -> list[Violation]:
    """Every violation, in rule order then URN order. `config` maps a rule name to its settings."""
    violations = []
    for rule in rules:
        settings = {**rule.config, **((config or {}).get(rule.name) or {})}
        if rule.check:
            for resource in resources:
                violations += [Violation(rule.name, rule.level, resource.urn, f.why, f.fix)
                               for f in rule.check(resource, settings)]
        if rule.stack_check:
            violations += [Violation(rule.name, rule.level, resource.urn, f.why, f.fix)
                           for resource, f in rule.stack_check(resources, settings)]
    order = {rule.name: index for index, rule in enumerate(RULES)}
    return sorted(set(violations), key=lambda v: (order.get(v.policy, len(order)), v.urn, v.why))


def check_plan(document: Any, config: dict[str, dict] | None = None) -> list[Violation]:
    return check_resources(plan_resources(document), config=config)


def mandatory(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.level == MANDATORY]
