"""The catalog through the content cache: what a plan or `select` reads back is the catalog a fresh build gives, a
hit does not build it again, and an edited data file misses."""

from __future__ import annotations

import shutil

import pytest

from gpufleet.catalog import loader
from gpufleet.catalog.datadir import SHIPPED_DIR
from gpufleet.cloud_init.content_cache import CACHE_DIR_ENV


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    loader._load.cache_clear()
    yield tmp_path / "cache"
    loader._load.cache_clear()


def facts(catalog: loader.Catalog) -> tuple:
    return (catalog.folder, catalog.origin, catalog.gpus, catalog.instances, catalog.flagged_instances,
            catalog.raw_prices, catalog.prices, catalog.flags, catalog.sources, catalog.price_sources)


def builds(monkeypatch) -> list:
    """Records each real build of a catalog."""
    calls: list = []
    read = loader._read

    def counting(*args):
        calls.append(args)
        return read(*args)

    monkeypatch.setattr(loader, "_read", counting)
    return calls


def test_a_hit_is_the_catalog_a_fresh_build_gives_and_does_not_build(cache, monkeypatch):
    fresh = loader.read_catalog(SHIPPED_DIR)
    calls = builds(monkeypatch)
    assert facts(loader.load_catalog(SHIPPED_DIR)) == facts(fresh)
    loader._load.cache_clear()
    assert facts(loader.load_catalog(SHIPPED_DIR)) == facts(fresh)
    assert len(calls) == 1
    assert [p.name for p in cache.rglob("*") if p.is_file()] and (cache / "v1" / "catalog").is_dir()


def test_an_edited_data_file_misses(cache, monkeypatch, tmp_path):
    folder = tmp_path / "catalog"
    shutil.copytree(SHIPPED_DIR, folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    before = loader.load_catalog(folder)
    prices = folder / "aws" / "prices.csv"
    header, first, *rest = prices.read_text().splitlines(keepends=True)
    cells = first.split(",")
    cells[3] = str(float(cells[3]) + 1.0) if cells[3] else "1.0"  # on_demand of the first row
    prices.write_text(header + ",".join(cells) + "".join(rest))
    loader._load.cache_clear()
    calls = builds(monkeypatch)
    after = loader.load_catalog(folder)
    assert len(calls) == 1
    assert after.raw_prices != before.raw_prices
    assert facts(after) == facts(loader.read_catalog(folder))
