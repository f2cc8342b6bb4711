"""The plan's dashboards through the content cache: the same text as the SDK-built dashboards on a miss and on a hit,
a hit never calls the builder, and an edit of the builder's source (its salt) misses."""

from __future__ import annotations

import sys

import pytest

from gpufleet.cloud_init.content_cache import CACHE_DIR_ENV, module_salt
from gpufleet.monitoring import dashboard_cache, dashboards
from gpufleet.monitoring.pricing import NodePricing

CASES = [
    (NodePricing(usd_per_node_hour=98.32), 8, True, False, False, False),
    (NodePricing(usd_per_node_hour=1.5, usd_per_base_node_hour=4.0, base_nodes=2), 4, False, True, False, True),
    (NodePricing(usd_per_node_hour=0.25), 1, True, False, True, False),
]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    dashboard_cache.dashboards.cache_clear()
    yield tmp_path / "cache"
    dashboard_cache.dashboards.cache_clear()


@pytest.mark.parametrize("case", CASES)
def test_a_miss_and_a_hit_give_the_builders_text(cache, monkeypatch, case):
    built = dashboards.dashboards(*case)
    assert dashboard_cache.dashboards(*case) == built  # miss: built and stored
    assert list(dashboard_cache.dashboards(*case)) == list(built)  # the files keep their order
    dashboard_cache.dashboards.cache_clear()

    def refuse(*_args):
        raise AssertionError("a cache hit must not build the dashboards")

    monkeypatch.setattr(dashboards, "dashboards", refuse)
    assert dashboard_cache.dashboards(*case) == built  # hit: read back from the folder


def test_other_arguments_or_an_edited_builder_miss(cache, monkeypatch):
    first, second = CASES[0], CASES[1]
    assert dashboard_cache.dashboards(*first) != dashboard_cache.dashboards(*second)
    dashboard_cache.dashboards.cache_clear()
    dashboard_cache._salt.cache_clear()
    calls = []
    original = dashboards.dashboards

    def counting(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(dashboards, "dashboards", counting)
    monkeypatch.setattr(dashboard_cache, "module_salt", lambda name: "an edited builder")
    try:
        assert dashboard_cache.dashboards(*first) == original(*first)
    finally:
        dashboard_cache._salt.cache_clear()
    assert len(calls) == 1


def test_the_salt_of_a_module_not_yet_loaded_is_its_salt_once_loaded(monkeypatch):
    salt = module_salt(dashboards.__name__)
    assert salt is not None and dashboards.__name__ in salt
    module_salt.cache_clear()
    monkeypatch.delitem(sys.modules, dashboards.__name__)
    try:
        assert module_salt(dashboards.__name__) == salt
    finally:
        module_salt.cache_clear()
