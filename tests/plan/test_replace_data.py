"""Replace-on-change data: every type the shipped stacks declare has facts with a source, and each type's facts
decide a replacement in the diff (one case per type)."""

from __future__ import annotations

import pytest

from gpufleet.plan.diff import diff_plans
from gpufleet.plan.replace_data import ALL, REPLACE_ON_CHANGES, has_cloud_state, replace_facts

from .plan_docs import NODE_CONFIG_IN_S3, STACKS, plan_doc


def _declared_types() -> set[str]:
    documents = [plan_doc(stack) for stack in STACKS] + [plan_doc("aws-train", *NODE_CONFIG_IN_S3)]
    return {r["type"] for document in documents for r in document["resources"]}


def test_every_declared_cloud_type_has_replace_data_with_its_source():
    missing = sorted(t for t in _declared_types() if has_cloud_state(t) and replace_facts(t) is None)
    assert missing == []
    for token, facts in REPLACE_ON_CHANGES.items():
        assert facts.source and ("terraform-provider" in facts.source or "azure-native" in facts.source), token


def _doc(token: str, inputs: dict) -> dict:
    return {"stack": "t", "outputs": {}, "resources": [
        {"urn": f"urn:pulumi:t::p::{token}::r", "type": token, "name": "r", "parent": "", "inputs": inputs}]}


@pytest.mark.parametrize("token", sorted(REPLACE_ON_CHANGES))
def test_each_type_replaces_on_its_listed_inputs_and_updates_in_place_otherwise(token):
    facts = REPLACE_ON_CHANGES[token]
    listed = sorted(facts.properties - {ALL})
    if listed:
        diff = diff_plans(_doc(token, {listed[0]: "a"}), _doc(token, {listed[0]: "b"}))
        assert [c.urn for c in diff.replaced] == [f"urn:pulumi:t::p::{token}::r"], listed[0]
    diff = diff_plans(_doc(token, {"someUpdatableInput": 1}), _doc(token, {"someUpdatableInput": 2}))
    assert bool(diff.replaced) == (ALL in facts.properties)
    assert not diff.changed[0].unknown_replace
