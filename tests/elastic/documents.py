"""The plan document of a raw spec, cached by its JSON, and its resources by name: what the three clouds' elastic
plan tests (tests/{aws,azure,gcp}/test_elastic.py) read."""

from __future__ import annotations

import json
from functools import cache

from gpufleet.plan.render import plan_json
from tests.conftest import cached_plan


@cache
def _doc(spec_json: str) -> str:
    return plan_json(cached_plan(json.loads(spec_json)))


def doc(raw: dict) -> dict:
    """A fresh copy each call: tests may change what they get."""
    return json.loads(_doc(json.dumps(raw, sort_keys=True)))


def named(document: dict) -> dict[str, dict]:
    return {r["name"]: r for r in document["resources"]}
