"""The CrossGuard front end: each gpufleet rule as a pulumi-policy ResourceValidationPolicy or StackValidationPolicy.

The rule logic lives in `gpufleet.policy` (plain functions over resource type and properties), shared with
`gpufleet policy PLAN.json`. This file only adapts pulumi-policy's argument types to it; `__main__.py` builds the
pack. Kept apart from `__main__.py` because constructing a PolicyPack starts the engine's gRPC server and blocks.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpufleet.policy.model import MANDATORY, Resource, Rule
from gpufleet.policy.rules import RULES

PACK_NAME = "gpufleet-gpu-infrastructure"


def _level(rule: Rule) -> EnforcementLevel:
    return EnforcementLevel.MANDATORY if rule.level == MANDATORY else EnforcementLevel.ADVISORY


def _schema(rule: Rule) -> PolicyConfigSchema | None:
    if not rule.config:
        return None
    kinds = {float: "number", int: "number", str: "string", bool: "boolean"}
    return PolicyConfigSchema({key: {"type": kinds[type(value)], "default": value}
                               for key, value in rule.config.items()})


def _settings(rule: Rule, config) -> dict:
    return {**rule.config, **dict(config or {})}


def plain(value: Any) -> Any:
    """The engine hands policies its unknown-checking proxies (Mapping/Sequence, not dict/list), which raise on an
    unknown value. The rules want plain data: unwrap them, keeping an unknown as its sentinel string (an opaque
    value, equal to the same unknown elsewhere) so that one unknown id does not stop a whole policy in preview."""
    if _is_proxy(value):
        value = value["__target"]  # the wrapped dict or list; its items are proxies or plain values
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def _is_proxy(value: Any) -> bool:
    return type(value).__name__ in ("_DictProxy", "_ListProxy")


def _message(why: str, fix: str) -> str:
    return f"{why}. Fix: {fix}."


def resource_policy(rule: Rule) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        resource = Resource(args.resource_type, plain(args.props), args.urn, args.name)
        for finding in rule.check(resource, _settings(rule, args.get_config())):
            report_violation(_message(finding.why, finding.fix), None)

    return ResourceValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                    enforcement_level=_level(rule), config_schema=_schema(rule))


def stack_policy(rule: Rule) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [Resource(r.resource_type, plain(r.props), r.urn, r.name) for r in args.resources]
        for resource, finding in rule.stack_check(resources, _settings(rule, args.get_config())):
            report_violation(_message(finding.why, finding.fix), resource.urn or None)

    return StackValidationPolicy(name=rule.name, description=rule.description, validate=validate,
                                 enforcement_level=_level(rule), config_schema=_schema(rule))


def policies() -> list:
    """One CrossGuard policy per gpufleet rule, in the rules' order."""
    return [resource_policy(r) if r.check else stack_policy(r) for r in RULES]
