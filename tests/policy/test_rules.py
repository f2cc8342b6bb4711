"""Policy rules over real plan documents: shipped stacks are clean, every mutation in the corpus is caught."""

from __future__ import annotations

import json

import pytest

from gpufleet.plan.cli import main
from gpufleet.policy.engine import check_plan
from gpufleet.policy.rules import RULES

from ..plan.plan_docs import NODE_CONFIG_IN_S3, STACKS, plan_doc
from .mutations import CORPUS, OVERRIDES, mutated

VARIANTS = [("aws-train", *NODE_CONFIG_IN_S3),
            ("aws-train", "market=mixed"), ("aws-train", "nodes=4"), ("gcp-train", "nodes=4"),
            ("azure-train", "nodes=4"), ("aws-dev", "market=spot"), ("gcp-dev", "market=spot")]


@pytest.mark.parametrize("stack", STACKS)
def test_the_shipped_stacks_have_no_violations(stack):
    assert [v.line() for v in check_plan(plan_doc(stack))] == []


@pytest.mark.parametrize("variant", VARIANTS, ids=["-".join(v) for v in VARIANTS])
def test_documented_variants_have_no_violations(variant):
    assert [v.line() for v in check_plan(plan_doc(*variant))] == []


@pytest.mark.parametrize(("policy", "stack", "mutation"), CORPUS, ids=[f"{p}-{m.__name__}" for p, _, m in CORPUS])
def test_every_insecure_mutation_is_caught_by_its_policy(policy, stack, mutation):
    found = {v.policy for v in check_plan(mutated(stack, mutation))}
    assert policy in found
    assert policy not in {v.policy for v in check_plan(plan_doc(stack, *OVERRIDES.get(mutation, ())))}


def test_every_policy_has_a_failing_case_in_the_corpus():
    assert {r.name for r in RULES} == {p for p, _, _ in CORPUS}


def test_the_cli_prints_one_line_per_violation_and_exits_1_on_mandatory(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    open_ssh = next(mutation for policy, _, mutation in CORPUS if policy == "gcp-no-open-ssh")
    bad.write_text(json.dumps(mutated("gcp-train", open_ssh)))
    assert main(["policy", str(bad)]) == 1
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith("mandatory gcp-no-open-ssh urn:pulumi:gcp-train::") and "fix:" in line


def test_the_cli_exits_0_on_advisories_only_and_when_clean(tmp_path, capsys):
    advisory = tmp_path / "advisory.json"
    advisory.write_text(json.dumps(mutated("aws-dev", CORPUS[-1][2])))
    assert main(["policy", str(advisory)]) == 0
    assert capsys.readouterr().out.startswith("advisory cost-dev-stack-without-spot")
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps(plan_doc("azure-dev")))
    assert main(["policy", str(clean)]) == 0


@pytest.mark.parametrize("content", ["nope", "{}", '{"resources": [1]}'])
def test_the_cli_exits_2_on_bad_input(content, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["policy", str(bad)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["policy", str(tmp_path / "missing.json")]) == 2
