"""AWS: who may launch, tag or terminate instances is held to the cluster's own (the Slurm controller's power
programs are the only such identity gpufleet declares; `gpufleet.aws.elastic.power_policy`).

An Allow statement in an inline or managed policy document that grants (by name or by wildcard):
- ec2:RunInstances needs an `ec2:LaunchTemplate` condition (launches from named templates only);
- ec2:CreateFleet needs an `aws:RequestTag/` condition, or resources that name no launch template by wildcard;
- ec2:CreateTags needs an `ec2:CreateAction` condition (tags on create) or an `ec2:ResourceTag/` one;
- ec2:TerminateInstances needs an `ec2:ResourceTag/` (or `aws:ResourceTag/`) condition;
- iam:PassRole needs a resource without wildcards (the node role's ARN).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from .common import as_list
from .model import Finding, Resource

POLICY_TYPES = ("aws:iam/rolePolicy:RolePolicy", "aws:iam/policy:Policy")
FIX = "scope it as gpufleet's elastic controller policy does (gpufleet.aws.elastic.power_policy)"


def _document(resource: Resource) -> dict | None:
    policy = resource.props.get("policy")
    if isinstance(policy, dict):
        return policy
    if not isinstance(policy, str):
        return None
    try:
        document = json.loads(policy)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _matches(action: str, patterns: Any) -> bool:
    return any(isinstance(pattern, str) and fnmatchcase(action.lower(), pattern.lower())
               for pattern in as_list(patterns))


def _grants(statement: dict, action: str) -> bool:
    """`Action` naming it (or a wildcard over it), or `NotAction` leaving it out."""
    if "NotAction" in statement:
        return not _matches(action, statement["NotAction"])
    return _matches(action, statement.get("Action"))


def _condition_keys(statement: dict) -> list[str]:
    condition = statement.get("Condition")
    if not isinstance(condition, dict):
        return []
    return [key for block in condition.values() if isinstance(block, dict) for key in block]


def _has_key(statement: dict, *prefixes: str) -> bool:
    return any(key.lower().startswith(prefix.lower()) for key in _condition_keys(statement) for prefix in prefixes)


def _wildcard_templates(statement: dict) -> bool:
    if "NotResource" in statement:
        return True
    return any(not isinstance(arn, str) or arn == "*" or ("launch-template/" in arn and "*" in arn.split("/", 1)[1])
               or arn.endswith(":*") for arn in as_list(statement.get("Resource")))


def _problems(statement: dict) -> Iterable[str]:
    if _grants(statement, "ec2:RunInstances") and not _has_key(statement, "ec2:LaunchTemplate"):
        yield "ec2:RunInstances without an ec2:LaunchTemplate condition launches anything"
    if _grants(statement, "ec2:CreateFleet") and not _has_key(statement, "aws:RequestTag/") \
            and _wildcard_templates(statement):
        yield "ec2:CreateFleet on any launch template, without an aws:RequestTag condition"
    if _grants(statement, "ec2:CreateTags") and not _has_key(statement, "ec2:CreateAction", "ec2:ResourceTag/",
                                                             "aws:ResourceTag/"):
        yield "ec2:CreateTags without an ec2:CreateAction or ec2:ResourceTag condition retags any resource"
    if _grants(statement, "ec2:TerminateInstances") and not _has_key(statement, "ec2:ResourceTag/",
                                                                     "aws:ResourceTag/"):
        yield "ec2:TerminateInstances without an ec2:ResourceTag condition terminates any instance"
    if _grants(statement, "iam:PassRole") and any(not isinstance(arn, str) or "*" in arn
                                                  for arn in as_list(statement.get("Resource")) or ["*"]):
        yield "iam:PassRole on a wildcard passes any role"


def instance_writers_scoped(resource: Resource, config: dict[str, Any]) -> Iterable[Finding]:
    if resource.type not in POLICY_TYPES:
        return
    document = _document(resource)
    if document is None:
        return
    for statement in as_list(document.get("Statement")):
        if not isinstance(statement, dict) or statement.get("Effect") != "Allow":
            continue
        for problem in _problems(statement):
            yield Finding(f"statement {statement.get('Sid') or '(no Sid)'}: {problem}", FIX)
