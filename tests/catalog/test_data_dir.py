"""`--data-dir`: plan, select and catalog read the same refreshed folder, and show which folder they read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpufleet.catalog.datadir import ENV_DATA_DIR, GIVEN, SHIPPED, USER, active_data_dir, use_data_dir
from gpufleet.catalog.loader import DATA_DIR
from gpufleet.plan.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pricing"


@pytest.fixture(scope="module")
def refreshed(tmp_path_factory):
    """A user folder holding the full catalog with p5.48xlarge cut to $40 in us-east-1."""
    folder = tmp_path_factory.mktemp("refreshed") / "gpufleet"
    assert main(["catalog", "refresh", "--cloud", "aws", "--data-dir", str(folder), "--today", "2026-12-01",
                 "--from-file", str(FIXTURES / "aws_offer_us-east-1_price-cut.json"), "--write"]) == 0
    return folder


@pytest.fixture(autouse=True)
def no_chosen_folder():
    yield
    use_data_dir(None)


def select_p5(capsys, *extra):
    assert main(["select", "--gpu", "H100", "--gpus-per-node", "8", "--cloud", "aws", "--region", "us-east-1",
                 "--json", *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    return [o for o in doc["offers"] if o["instance_type"] == "p5.48xlarge"][0], doc


def test_select_and_catalog_read_the_given_folder(refreshed, capsys):
    shipped, _ = select_p5(capsys)
    assert shipped["usd_per_hour"] == 55.04
    mine, doc = select_p5(capsys, "--data-dir", str(refreshed))
    assert mine["usd_per_hour"] == 40.0 and mine["snapshot_date"] == "2026-12-01"
    assert any(f"catalog data: {GIVEN} ({refreshed})" in line for line in doc["catalog"])
    assert main(["catalog", "--gpu", "H100", "--cloud", "aws", "--region", "us-east-1", "--json",
                 "--data-dir", str(refreshed)]) == 0
    rows = [r for r in json.loads(capsys.readouterr().out)["offers"] if r["instance_type"] == "p5.48xlarge"]
    assert rows and all(r["on_demand"] == 40.0 for r in rows if r.get("on_demand") is not None)


def test_plan_reads_the_given_folder_and_says_so(refreshed, capsys):
    assert main(["plan", "aws-train", "--set", "market=on-demand", "--data-dir", str(refreshed)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"catalog data: {GIVEN} ({refreshed})" in out, out[-600:]


def test_the_user_folder_is_read_when_a_refresh_wrote_it(refreshed, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(refreshed.parent))
    assert active_data_dir() == (refreshed, USER)
    monkeypatch.setenv(ENV_DATA_DIR, str(DATA_DIR))
    assert active_data_dir()[1] == ENV_DATA_DIR


def test_without_a_refresh_the_shipped_catalog_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert active_data_dir() == (DATA_DIR, SHIPPED)
