"""The expected figures are data with sources: every catalog GPU has an entry, every figure names its source and
date, an empty figure says why, and an instance entry names a catalog instance."""

from __future__ import annotations

from datetime import date

import pytest

from gpufleet.bench.expected import (
    DATA_FILE,
    DEFAULT_TOLERANCE,
    GPU_METRICS,
    INSTANCE_METRICS,
    Expected,
    _figure,
    figures_for,
    load_expected,
)
from gpufleet.catalog import load_catalog
from gpufleet.cloud_init.config import FABRICS as NODE_FABRICS
from tests.yaml_reader import read_yaml


@pytest.fixture(scope="module")
def expected() -> Expected:
    return load_expected()


def problems(figures: dict) -> list[str]:
    """What is wrong with each figure of one entry: the rule the data must keep."""
    found = []
    for metric, figure in figures.items():
        if figure.value is None:
            if not figure.why:
                found.append(f"{metric}: empty without `why`")
            continue
        if not figure.source:
            found.append(f"{metric}: {figure.value} has no source")
        if not isinstance(figure.date, date):
            found.append(f"{metric}: {figure.value} has no date")
        if figure.kind not in DEFAULT_TOLERANCE:
            found.append(f"{metric}: kind {figure.kind!r} is not one of {sorted(DEFAULT_TOLERANCE)}")
        if metric.startswith("allreduce") and not figure.bytes:
            found.append(f"{metric}: no message size (`bytes`)")
    return found


def test_every_catalog_gpu_has_every_figure_or_says_why(expected):
    catalog = load_catalog()
    assert sorted(catalog.gpus) == sorted(expected.gpus)
    for model, figures in expected.gpus.items():
        assert sorted(figures) == sorted(GPU_METRICS), model
        assert problems(figures) == [], model


def test_every_instance_entry_is_a_catalog_instance_with_sourced_figures(expected):
    catalog = load_catalog()
    known = {f"{i.cloud}/{i.name}": i for i in catalog.instances.values()}
    for key, figures in expected.instances.items():
        assert key in known, key
        assert {m.split(".")[0] for m in figures} <= set(INSTANCE_METRICS), key
        # A fallback fabric's figure (allreduce_two_node.<fabric>) names a fabric a node can run.
        assert {m.split(".")[1] for m in figures if "." in m} <= set(NODE_FABRICS), key
        assert problems(figures) == [], key
        if "allreduce_two_node" in figures:
            assert known[key].fabric, f"{key}: a two-node figure on a type without a fabric"


@pytest.mark.parametrize("row, wanted", [
    ({"value": 48, "kind": "minimum", "date": "2025-08-20"}, "has no source"),
    ({"value": 48, "kind": "minimum", "source": "somewhere"}, "has no date"),
    ({"value": 48, "kind": "typical", "source": "x", "date": "2025-08-20"}, "kind 'typical'"),
    ({"value": None}, "empty without `why`"),
])
def test_a_figure_without_source_date_or_kind_is_refused(row, wanted):
    assert any(wanted in p for p in problems({"h2d_gbps": _figure("h2d_gbps", row)}))


def test_the_shipped_file_has_no_figure_without_source(tmp_path):
    """The same rule read straight from the YAML, so an alias or a typo in a key cannot slip past the loader."""
    doc = read_yaml(DATA_FILE.read_text())
    for section in ("gpus", "instances"):
        for key, rows in doc[section].items():
            for metric, row in rows.items():
                if row.get("value") is not None:
                    assert row.get("source") and row.get("date"), f"{section}.{key}.{metric}"


def test_floor_uses_the_kind_default_or_the_override(expected):
    h100 = figures_for("aws", "p5.48xlarge", "H100", expected)
    assert h100.h2d_gbps.floor() == 48  # a published threshold is the floor
    assert h100.matmul_tflops.floor() == pytest.approx(794.5 * 0.8)
    assert h100.allreduce_two_node.floor() == pytest.approx(436.95 * 0.8)
    assert h100.h2d_gbps.floor(0.9) == pytest.approx(43.2)


def test_a_cluster_off_its_types_fabric_is_compared_with_that_fabrics_figure(expected):
    """A3 Mega over TCP (every gVNIC NIC, or the host NIC alone) and a p5 with `fabric: tcp` are never held to a
    GPUDirect or EFA figure; with no public TCP figure the comparison says so instead of guessing."""
    for fabric in ("tcp-multinic", "tcp"):
        figure = figures_for("gcp", "a3-megagpu-8g", "H100", expected, fallback_fabric=fabric).allreduce_two_node
        assert figure.value is None and figure.metric == "allreduce_two_node" and "A3 Mega" in figure.why
    p5 = figures_for("aws", "p5.48xlarge", "H100", expected, fallback_fabric="tcp").allreduce_two_node
    assert p5.value is None and p5.why.endswith("aws/p5.48xlarge over tcp")
    assert figures_for("aws", "p5.48xlarge", "H100", expected).allreduce_two_node.value == 436.95


def test_missing_figures_stay_empty_and_say_why(expected):
    t4 = figures_for("aws", "g4dn.xlarge", "T4", expected)
    assert all(f.value is None and f.why for f in t4.all())
    assert t4.matmul_tflops.floor() is None
