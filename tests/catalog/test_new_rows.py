"""Issue 13's new rows: AWS g7e (RTX PRO 6000) and more p6-b300 regions, each from a dated public extract, checked
by hand against it; the types still without a public price stay unpriced."""

from __future__ import annotations

from datetime import date

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.offers import Requirement, rank
from gpufleet.catalog.selector import select
from gpufleet.catalog.zones import zone_kind
from gpufleet.spec import SpecError
from gpufleet.spec.parse import parse_cluster_spec

CAT = load_catalog()
AWS = {name: row for (cloud, name), row in CAT.instances.items() if cloud == "aws"}
VANTAGE_AUG = "vantage-2026-08-26"


def rows(instance_type: str) -> list:
    return [p for p in CAT.raw_prices if p.cloud == "aws" and p.instance_type == instance_type]


def test_the_august_extract_is_its_own_dated_source():
    source = CAT.source_of_key("aws", VANTAGE_AUG)
    assert source.key == VANTAGE_AUG and source.snapshot_date == date(2026, 8, 26)
    assert "g7e_instances.js" in source.source and "299375be" in source.source


# Checked by hand against tsaol/aws-gpu data/g7e_instances.js and data/p6-b300_instances.js @ 299375be
# (pricing[region].onDemand); prices at the source's full precision.
@pytest.mark.parametrize("name, region, on_demand", [
    ("g7e.2xlarge", "us-east-1", 3.36312),
    ("g7e.4xlarge", "eu-south-2", 4.213),
    ("g7e.8xlarge", "ap-northeast-1", 7.64051),
    ("g7e.12xlarge", "us-west-2", 8.28608),
    ("g7e.24xlarge", "eu-west-2", 28.80344),
    ("g7e.48xlarge", "us-east-1", 33.14432),
    ("g7e.48xlarge", "eu-central-1", 56.36354),
    ("p6-b300.48xlarge", "us-east-1", 142.416),
    ("p6-b300.48xlarge", "ap-northeast-2", 209.1735),
    ("p6-b300.48xlarge", "us-gov-east-1", 170.9)])
def test_rows_match_the_extract(name, region, on_demand):
    [row] = [p for p in rows(name) if p.region == region and p.source == VANTAGE_AUG]
    assert (row.zone, row.on_demand, row.spot, row.reserved_1y, row.reserved_3y) == ("", on_demand, None, None, None)


def test_g7e_has_every_size_in_ten_regions_and_no_local_zone_or_guessed_market():
    for size in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge"):
        priced = rows(f"g7e.{size}")
        assert len(priced) == 10 and all(p.source == VANTAGE_AUG for p in priced), size
        assert all(p.spot is None and p.reserved_1y is None for p in priced)
        assert not any("lax" in p.region for p in priced)  # the extract's Local Zone has no known zone id


@pytest.mark.parametrize("name, gpus, vcpus, memory, gbps, efa", [
    ("g7e.2xlarge", 1, 8, 64, 50, 0), ("g7e.8xlarge", 1, 32, 256, 100, 1), ("g7e.48xlarge", 8, 192, 2048, 1600, 0)])
def test_g7e_facts(name, gpus, vcpus, memory, gbps, efa):
    row = AWS[name]
    assert (row.gpu, row.gpus, row.vcpus, row.memory_gib, row.network_gbps, row.efa_interfaces, row.nvswitch) == (
        "RTX-PRO-6000", gpus, vcpus, memory, gbps, efa, False)
    assert CAT.gpus["RTX-PRO-6000"].memory_gib == 96 and CAT.gpus["RTX-PRO-6000"].architecture == "blackwell"


def test_unconfirmed_efa_layout_is_said_not_guessed():
    for size in ("12xlarge", "24xlarge", "48xlarge"):
        row = AWS[f"g7e.{size}"]
        assert row.fabric is None and "not confirmed" in row.unverified


@pytest.mark.parametrize("market", ["on-demand"])
@pytest.mark.parametrize("nodes", [1, 2])
def test_rtx_pro_6000_top_pick_is_a_regular_region(market, nodes):
    top = rank(Requirement(gpus=("RTX-PRO-6000",), gpus_per_node=8, nodes=nodes, market=market), CAT).offers[0]
    assert top.candidate.instance.name == "g7e.48xlarge" and top.usd_per_hour == pytest.approx(33.14432 * nodes)
    assert zone_kind("aws", top.candidate.zone) in ("zone", "region")


def test_govcloud_b300_is_hidden_by_default():
    offers = rank(Requirement(gpus=("B300",), gpus_per_node=8), CAT).offers
    assert offers and not any(o.candidate.region.startswith("us-gov-") for o in offers)


@pytest.mark.parametrize("cloud, name", [("aws", "p6e-gb200.36xlarge"), ("gcp", "a4x-highgpu-4g"),
                                         ("azure", "Standard_ND128isr_NDR_GB200_v6")])
def test_types_without_a_public_price_stay_unpriced(cloud, name):
    assert (cloud, name) in CAT.instances
    assert not any(p.on_demand or p.spot for p in CAT.raw_prices if p.cloud == cloud and p.instance_type == name)


def test_azure_h200_is_priced_in_europe_from_the_dated_retail_price_record():
    offers = rank(Requirement(gpus=("H200",), gpus_per_node=8, market="on-demand", clouds=("azure",)), CAT).offers
    assert [(o.candidate.region, o.usd_per_hour) for o in offers] == [
        ("northeurope", 101.76), ("francecentral", 106.0), ("swedencentral", 110.272)]
    source = CAT.source_of_key("azure", offers[0].candidate.source_for(("on_demand",)))
    assert source.key == "azure-pricing-radar" and source.snapshot_date.isoformat() == "2026-08-22"


def test_azure_h200_spot_priced_as_pay_as_you_go_is_refused_with_the_reason():
    ranking = rank(Requirement(gpus=("H200",), gpus_per_node=8, market="spot", clouds=("azure",)), CAT)
    assert ranking.offers == ()
    h200 = [o for o in ranking.rejected if o.candidate.instance.name == "Standard_ND96isr_H200_v5"]
    assert len(h200) == 3 and all("no spot discount" in " ".join(o.reasons) for o in h200)


@pytest.mark.parametrize("cloud, name, where", [
    ("aws", "p6e-gb200.36xlarge", {"region": "us-east-1", "zone": "use1-az4"}),
    ("gcp", "a4x-highgpu-4g", {"region": "us-central1", "zone": "us-central1-b", "market": "spot"}),
    ("azure", "Standard_ND128isr_NDR_GB200_v6", {"region": "eastus"})])
def test_gb200_nodes_are_refused_until_the_node_stack_runs_arm64_and_imex(cloud, name, where):
    spec = parse_cluster_spec({"cloud": cloud, "nodes": 2, "accelerator": {"instance_type": name}, **where})
    with pytest.raises(SpecError) as caught:
        select(spec, CAT)
    assert [str(p) for p in caught.value.problems] == [
        f"`accelerator.instance_type`: got {name!r}; {name} (GB200) needs arm64 images and node software (gpufleet's "
        "are x86_64) and NVIDIA IMEX across the 72-GPU NVLink domain, which gpufleet does not set up yet; choose an "
        "x86_64 type such as an 8-GPU B200 or B300 one"]

