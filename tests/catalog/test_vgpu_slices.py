"""vGPU slices in the catalog (AWS G6f/Gr6f, Azure NVadsA10 v5 partial sizes, GCP G4 fractional sizes): their facts
and prices with a dated source, `catalog` listing them with their fraction, `select --gpu-fraction` finding them,
and whole-GPU queries (CLI and spec) never returning them unless asked."""

from __future__ import annotations

import json

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.cli import run_catalog, run_select
from gpufleet.catalog.offers import Requirement, rank
from gpufleet.catalog.selector import select
from gpufleet.spec import SpecError, parse_cluster_spec
from tests.catalog.helpers import catalog, instance, price

from .test_cli import TODAY, parse

CAT = load_catalog()
# (cloud, type): (GPU, fraction, slice GiB, vCPUs, RAM GiB), from each cloud's size page (see instances.yaml).
SLICES = {
    ("aws", "g6f.large"): ("L4", 0.125, 3, 2, 8), ("aws", "g6f.xlarge"): ("L4", 0.125, 3, 4, 16),
    ("aws", "g6f.2xlarge"): ("L4", 0.25, 6, 8, 32), ("aws", "g6f.4xlarge"): ("L4", 0.5, 12, 16, 64),
    ("aws", "gr6f.4xlarge"): ("L4", 0.5, 12, 16, 128),
    ("azure", "Standard_NV6ads_A10_v5"): ("A10", 0.16667, 4, 6, 55),
    ("azure", "Standard_NV12ads_A10_v5"): ("A10", 0.33333, 8, 12, 110),
    ("azure", "Standard_NV18ads_A10_v5"): ("A10", 0.5, 12, 18, 220),
    ("gcp", "g4-standard-6"): ("RTX-PRO-6000", 0.125, 12, 6, 22),
    ("gcp", "g4-standard-12"): ("RTX-PRO-6000", 0.25, 24, 12, 45),
    ("gcp", "g4-standard-24"): ("RTX-PRO-6000", 0.5, 48, 24, 90),
}


@pytest.mark.parametrize("key", SLICES)
def test_each_slice_is_a_share_of_a_named_gpu_with_its_facts_and_no_flags(key):
    row = CAT.instance(*key)
    assert (row.gpu, row.gpu_fraction, row.gpu_memory_gib, row.vcpus, row.memory_gib) == SLICES[key]
    assert (row.gpus, row.fabric, row.nvswitch, row.extra["gpu_driver"]) == (1, None, False, "grid")
    assert row.is_vgpu_slice and row.unsupported_driver is None
    assert CAT.flags_of(*key) == []


@pytest.mark.parametrize("key", SLICES)
def test_each_slice_has_prices_with_a_dated_source(key):
    prices = CAT.prices_of(*key)
    assert prices and all(p.on_demand and p.on_demand > 0 for p in prices)
    for p in prices:
        source = CAT.source_of(p)
        assert source.snapshot_date is not None and source.source


def test_a_slice_costs_less_than_the_whole_gpu_it_is_cut_from():
    def cheapest(cloud, name):
        return min(p.on_demand for p in CAT.prices_of(cloud, name, "us-east-1" if cloud == "aws" else None)
                   if p.on_demand)
    assert cheapest("aws", "g6f.large") < cheapest("aws", "g6f.2xlarge") < cheapest("aws", "g6.xlarge")


def test_memory_that_contradicts_the_fraction_is_flagged():
    row = instance(name="slice", gpu="T4", gpus=1, memory=12, fabric=None, gpu_fraction=0.125,
                   extra={"gpu_driver": "grid"})
    cat = catalog([row], [price(name="slice")])
    assert [f.kind for f in cat.flags] == ["gpu-memory"]
    assert "1/8 of T4" in cat.flags[0].reason
    fits = instance(name="slice", gpu="T4", gpus=1, memory=2, fabric=None, gpu_fraction=0.125,
                    extra={"gpu_driver": "grid"})
    assert catalog([fits], [price(name="slice")]).flags == ()


def test_a_slice_without_the_grid_driver_is_flagged():
    row = instance(name="slice", gpu="T4", gpus=1, memory=2, fabric=None, gpu_fraction=0.125)
    assert [f.kind for f in catalog([row], [price(name="slice")]).flags] == ["vgpu-slice"]


def _names(offers) -> set[str]:
    return {o.candidate.instance.name for o in offers}


def test_whole_gpu_queries_never_return_a_slice():
    for gpu in ("L4", "A10", "RTX-PRO-6000"):
        ranking = rank(Requirement(gpus=(gpu,)), CAT)
        assert (gpu == "A10" or ranking.offers) and not any(o.candidate.instance.is_vgpu_slice for o in ranking.offers)
        assert not any(o.candidate.instance.is_vgpu_slice for o in ranking.rejected)
    assert not any(o.candidate.instance.is_vgpu_slice for o in rank(Requirement(), CAT).offers)


@pytest.mark.parametrize("fraction, expected", [
    (0.25, {"g6f.2xlarge", "g4-standard-12"}),
    (0.125, {"g6f.large", "g6f.xlarge", "g4-standard-6"}),
    (0.5, {"g6f.4xlarge", "gr6f.4xlarge", "Standard_NV18ads_A10_v5", "g4-standard-24"}),
    (1 / 6, {"Standard_NV6ads_A10_v5"}),
])
def test_a_fraction_finds_exactly_the_slices_of_that_share(fraction, expected):
    assert _names(rank(Requirement(gpu_fraction=fraction), CAT).offers) == expected


def select_cli(argv, capsys):
    code = run_select(parse(["select", *argv]), today=TODAY)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_select_gpu_fraction_finds_the_l4_quarter(capsys):
    code, out, _ = select_cli(["--gpu", "L4", "--gpu-fraction", "0.25", "--json", "--limit", "0"], capsys)
    offers = json.loads(out)["offers"]
    assert code == 0 and {o["instance_type"] for o in offers} == {"g6f.2xlarge"}
    assert all(o["gpu_fraction"] == 0.25 and o["gpu_memory_gib"] == 6 for o in offers)
    # $/GPU-hour is per whole GPU: a quarter slice at $0.475/h is $1.90 per L4-hour.
    east = next(o for o in offers if o["region"] == "us-east-1")
    assert east["usd_per_hour"] == 0.475 and east["usd_per_gpu_hour"] == 1.9


def test_select_accepts_a_fraction_written_as_one_over_n(capsys):
    code, out, _ = select_cli(["--gpu-fraction", "1/6", "--json", "--limit", "0"], capsys)
    assert code == 0 and {o["instance_type"] for o in json.loads(out)["offers"]} == {"Standard_NV6ads_A10_v5"}


@pytest.mark.parametrize("value", ["0", "1", "1.5", "a/b", "1/0", "-0.25"])
def test_a_bad_fraction_exits_2_naming_the_flag(capsys, value):
    code, out, err = select_cli(["--gpu-fraction", value], capsys)
    assert code == 2 and out == "" and "--gpu-fraction" in err and "Traceback" not in err


def test_select_without_a_fraction_offers_whole_l4s_only(capsys):
    code, out, _ = select_cli(["--gpu", "L4", "--json", "--limit", "0"], capsys)
    offers = json.loads(out)["offers"]
    assert code == 0 and offers and all(o["gpu_fraction"] == 1.0 for o in offers)


def test_catalog_lists_the_l4_slices_with_their_fraction(capsys):
    code = run_catalog(parse(["catalog", "--gpu", "L4", "--json"]), today=TODAY)
    rows = json.loads(capsys.readouterr().out)["offers"]
    fractions = {r["instance_type"]: r["gpu_fraction"] for r in rows}
    assert code == 0 and fractions["g6f.large"] == 0.125 and fractions["g6f.4xlarge"] == 0.5
    assert fractions["g6.xlarge"] == 1.0 and fractions["g2-standard-4"] == 1.0


def test_catalog_table_shows_the_share(capsys):
    run_catalog(parse(["catalog", "--gpu", "L4", "--cloud", "aws"]), today=TODAY)
    out = capsys.readouterr().out
    assert "1/8 L4 (vGPU)" in out and "1/2 L4 (vGPU)" in out and "1x L4" in out


def test_catalog_with_a_fraction_lists_only_those_slices(capsys):
    run_catalog(parse(["catalog", "--gpu-fraction", "0.5", "--json"]), today=TODAY)
    rows = json.loads(capsys.readouterr().out)["offers"]
    assert {r["instance_type"] for r in rows} == {"g6f.4xlarge", "gr6f.4xlarge", "Standard_NV18ads_A10_v5",
                                                  "g4-standard-24"}


SPEC = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 1, "image": {"kind": "ubuntu-22.04"}}


def test_spec_gpu_fraction_picks_the_cheapest_slice_of_that_share():
    spec = parse_cluster_spec({**SPEC, "accelerator": {"gpu": "L4", "gpu_fraction": 0.5}})
    chosen = select(spec, CAT)
    assert chosen.instance.name == "g6f.4xlarge" and chosen.placement_group is False


def test_spec_without_a_fraction_never_gets_a_slice():
    spec = parse_cluster_spec({**SPEC, "accelerator": {"gpu": "L4", "gpus_per_node": 1}})
    assert not select(spec, CAT).instance.is_vgpu_slice


def test_a_fraction_no_slice_has_is_refused_with_the_ones_there_are():
    spec = parse_cluster_spec({**SPEC, "accelerator": {"gpu": "L4", "gpu_fraction": 0.3}})
    with pytest.raises(SpecError) as caught:
        select(spec, CAT)
    (problem,) = caught.value.problems
    assert problem.path == "accelerator.gpu_fraction" and "0.125, 0.25, 0.5" in problem.expected


def test_a_named_type_whose_share_differs_from_gpu_fraction_is_refused():
    spec = parse_cluster_spec({**SPEC, "accelerator": {"instance_type": "g6f.large", "gpu_fraction": 0.5}})
    with pytest.raises(SpecError) as caught:
        select(spec, CAT)
    (problem,) = caught.value.problems
    assert problem.path == "accelerator.gpu_fraction" and "1/8 slice of L4" in problem.expected


@pytest.mark.parametrize("value", [0, 1, 1.5, -0.25, True])
def test_spec_gpu_fraction_outside_0_to_1_is_refused_at_the_field(value):
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec({**SPEC, "accelerator": {"gpu": "L4", "gpu_fraction": value}})
    assert [p.path for p in caught.value.problems] == ["accelerator.gpu_fraction"]


def test_readme_vgpu_table_is_current():
    from pathlib import Path

    from gpufleet.catalog.vgpu_table import vgpu_table
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert vgpu_table() in readme, ("README.md vGPU table is stale: regenerate it with "
                                    "`.venv/bin/python -m gpufleet.catalog.vgpu_table --write`")
    assert vgpu_table().count("\n| ") == len(SLICES) + 1  # the header and one row per slice


def test_a_whole_gpu_spec_of_a_gpu_sold_only_in_slices_names_the_shares():
    spec = parse_cluster_spec({"cloud": "azure", "region": "westeurope", "nodes": 1, "accelerator": {"gpu": "A10"},
                               "access": {"ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1w"
                                          "bGUtcmVwbGFjZS1tZS0wMDAw a@b"}})
    with pytest.raises(SpecError) as caught:
        select(spec, CAT)
    (problem,) = caught.value.problems
    assert problem.path == "accelerator.gpu" and "only as vGPU slices" in problem.expected
    assert "0.16667, 0.33333, 0.5" in problem.expected
