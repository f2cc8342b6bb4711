"""The CrossGuard front end, called the way the engine calls it: registered validate functions with
pulumi-policy's own argument types (a PolicyPack is never constructed here: it starts a server and blocks)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from gpufleet.policy.engine import check_plan
from gpufleet.policy.model import MANDATORY
from gpufleet.policy.rules import RULES

from ..plan.plan_docs import plan_doc
from .mutations import CORPUS, mutated

POLICY_DIR = Path(__file__).resolve().parents[2] / "policy"


def _load_policies():
    spec = importlib.util.spec_from_file_location("gpufleet_policy_pack_policies", POLICY_DIR / "policies.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.policies()


POLICIES = {p.name: p for p in _load_policies()}


def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(protect=False, ignore_changes=[], delete_before_replace=None, aliases=[],
                                 custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[])


def _violations(document: dict, name: str) -> list[tuple[str, str | None]]:
    """What the engine would receive from policy `name` for this plan."""
    policy, found = POLICIES[name], []

    def report(message: str, urn: str | None = None) -> None:
        found.append((message, urn))

    resources = document["resources"]
    if isinstance(policy, ResourceValidationPolicy):
        for r in resources:
            props = unknown_checking_proxy(r["inputs"])  # what the engine passes (pulumi_policy/policy.py)
            policy.validate(ResourceValidationArgs(r["type"], props, r["urn"], r["name"], _opts(), None),
                            lambda message, urn=None, r=r: found.append((message, r["urn"])))
    else:
        policy_resources = [PolicyResource(r["type"], unknown_checking_proxy(r["inputs"]), r["urn"], r["name"],
                                           _opts(), None, None, [], {}) for r in resources]
        policy.validate(StackValidationArgs(policy_resources), report)
    return found


def test_every_rule_is_registered_with_its_enforcement_level():
    assert list(POLICIES) == [r.name for r in RULES]
    for rule in RULES:
        wanted = EnforcementLevel.MANDATORY if rule.level == MANDATORY else EnforcementLevel.ADVISORY
        assert POLICIES[rule.name].enforcement_level == wanted


@pytest.mark.parametrize(("policy", "stack", "mutation"), CORPUS, ids=[f"{p}-{m.__name__}" for p, _, m in CORPUS])
def test_the_pack_reports_what_the_offline_checker_reports(policy, stack, mutation):
    document = mutated(stack, mutation)
    reported = _violations(document, policy)
    offline = [v for v in check_plan(document) if v.policy == policy]
    assert reported and len(reported) == len(offline)
    assert sorted(urn for _, urn in reported) == sorted(v.urn for v in offline)
    assert all("Fix:" in message for message, _ in reported)
    assert _violations(plan_doc(stack), policy) == []


def test_the_pack_files_name_the_pinned_sdk_and_the_entry_point():
    requirements = (POLICY_DIR / "requirements.txt").read_text()
    assert "pulumi-policy==1.21.0" in requirements
    assert "PolicyPack(" in (POLICY_DIR / "__main__.py").read_text()
    assert "runtime:" in (POLICY_DIR / "PulumiPolicy.yaml").read_text()


def test_unknown_ids_in_a_preview_do_not_stop_or_fail_the_efa_policy():
    """In a first preview every id is unknown: the launch template's groups and the rules' group ids alike."""
    document = plan_doc("aws-train")
    for r in document["resources"]:
        inputs = r["inputs"]
        for nic in inputs.get("networkInterfaces", []):
            nic["securityGroups"] = [UNKNOWN_STRING_VALUE]
        for key in ("securityGroupId", "referencedSecurityGroupId"):
            if key in inputs:
                inputs[key] = UNKNOWN_STRING_VALUE
    assert _violations(document, "aws-efa-sg-self-referencing") == []
    for r in document["resources"]:
        if r["name"].endswith("-sg-self-out"):
            r["inputs"]["referencedSecurityGroupId"] = "sg-0123456789"
    assert len(_violations(document, "aws-efa-sg-self-referencing")) == 1
