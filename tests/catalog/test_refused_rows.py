"""Catalog rows gpufleet cannot deploy yet (issue 27, item 7): GCP a4x-highgpu-4g (GB200, arm64 + IMEX) and Azure
Standard_ND96isr_MI300X_v5 (AMD, ROCm). `gpufleet catalog` and `gpufleet select` show them, with their prices where
public, and say why a plan of them is refused; the plan refuses them with the same reason."""

from __future__ import annotations

import json

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.cli import run_catalog, run_select
from gpufleet.catalog.deployable import refusal
from gpufleet.catalog.selector import select as select_instance
from gpufleet.pipeline import check_cluster_input
from gpufleet.plan.stackfile import CLUSTER_KEY, read_stack_config
from gpufleet.spec import SpecError, parse_cluster_spec

from .test_cli import TODAY, parse

CAT = load_catalog()
AZURE_TRAIN = read_stack_config("azure-train")[CLUSTER_KEY]
MI300X = "Standard_ND96isr_MI300X_v5"
A4X = "a4x-highgpu-4g"
ROCM = "carries AMD GPUs (ROCm driver), which gpufleet's node software does not install"
ARM64_IMEX = ("needs arm64 images and node software (gpufleet's are x86_64) and NVIDIA IMEX across the 72-GPU NVLink "
              "domain, which gpufleet does not set up yet")


def run_json(command, argv, capsys) -> tuple[int, dict]:
    code = command(parse([*argv, "--json"]), today=TODAY)
    return code, json.loads(capsys.readouterr().out)


def test_the_catalog_lists_mi300x_with_its_prices_and_why_plans_are_refused(capsys):
    code, doc = run_json(run_catalog, ["catalog", "--gpu", "MI300X"], capsys)
    rows = [(r["instance_type"], r["region"], r["on_demand"], r["spot"], r["plan_refused"]) for r in doc["offers"]]
    assert code == 0
    assert rows == [(MI300X, "northeurope", 57.6, 10.64448, ROCM), (MI300X, "francecentral", 60.0, 11.088, ROCM),
                    (MI300X, "swedencentral", 67.2, 12.41856, ROCM)]


@pytest.mark.parametrize("market", ["on-demand", "spot"])
def test_the_catalog_lists_a4x_and_why_plans_are_refused(market, capsys):
    """A4X is sold only through reservations, Spot and Flex-start, and no public price was found: the row is listed
    with its markets unpriced (`-`), and the reason a plan is refused."""
    _, doc = run_json(run_catalog, ["catalog", "--gpu", "GB200", "--market", market], capsys)
    a4x = [r for r in doc["offers"] if r["instance_type"] == A4X]
    assert len(a4x) == 1 and a4x[0]["plan_refused"] == ARM64_IMEX, doc["offers"]
    assert a4x[0]["on_demand_needs_reservation"] is True
    assert {r["on_demand"] for r in a4x} == {None}


def test_the_catalog_table_says_refused_and_why(capsys):
    run_catalog(parse(["catalog", "--gpu", "MI300X,GB200"]), today=TODAY)
    text = capsys.readouterr().out
    assert f"plan refused: azure {MI300X} {ROCM}" in text
    assert f"plan refused: gcp {A4X} {ARM64_IMEX}" in " ".join(text.split())


def test_select_shows_mi300x_first_among_the_misses_with_its_price_and_reason(capsys):
    code, doc = run_json(run_select, ["select", "--gpu", "MI300X"], capsys)
    assert code == 1 and doc["offers"] == []
    nearest = doc["nearest"][0]
    assert (nearest["instance_type"], nearest["region"], nearest["usd_per_hour"]) == (MI300X, "northeurope", 57.6)
    assert nearest["reasons"] == [f"a plan of it is refused: it {ROCM}"]


def test_select_never_calls_a_gb200_type_feasible_and_says_why(capsys):
    code, doc = run_json(run_select, ["select", "--gpu", "GB200", "--market", "spot"], capsys)
    assert code == 1
    reasons = {o["instance_type"]: o["reasons"] for o in doc["nearest"]}
    for name in (A4X, "p6e-gb200.36xlarge", "Standard_ND128isr_NDR_GB200_v6"):
        assert f"a plan of it is refused: it {ARM64_IMEX}" in reasons[name], reasons


def test_the_refusal_is_one_fact_for_plan_and_select():
    """The node rule refuses a plan with the phrase the catalog listing prints."""
    with pytest.raises(SpecError) as caught:
        select_instance(parse_cluster_spec({"cloud": "gcp", "region": "us-central1", "zone": "us-central1-b",
                                            "nodes": 2, "market": "spot", "accelerator": {"instance_type": A4X}}),
                        CAT)
    assert ARM64_IMEX.removesuffix(", which gpufleet does not set up yet").removeprefix("needs ") in str(caught.value)
    assert refusal(CAT.instance("gcp", A4X), CAT.gpu("GB200")) == ARM64_IMEX
    assert refusal(CAT.instance("azure", MI300X), CAT.gpu("MI300X")) == ROCM
    assert refusal(CAT.instance("gcp", "a3-megagpu-8g"), CAT.gpu("H100")) is None


@pytest.mark.parametrize("accelerator, expected", [
    ({"gpu": "MI300X"}, f"`accelerator.gpu`: got 'MI300X'; MI300X on azure ('{MI300X}') {ROCM}; choose an NVIDIA GPU"),
    ({"instance_type": MI300X}, f"`accelerator`: got '{MI300X}'; this size {ROCM}, nor does the HPC image"),
    ({"instance_type": "Standard_ND_MI300X_v5"}, f"did you mean '{MI300X}'"),
])
def test_a_plan_of_mi300x_is_refused_with_the_reason(accelerator, expected):
    with pytest.raises(SpecError) as caught:
        check_cluster_input({**AZURE_TRAIN, "region": "northeurope", "accelerator": accelerator}, CAT)
    assert len(caught.value.problems) == 1 and expected in str(caught.value), caught.value
