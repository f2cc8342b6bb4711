"""GCP G4 (RTX PRO 6000 Blackwell Server Edition): the catalog rows, their prices from the dated Cloud Billing
snapshot (Cyclenerd pricing.yml @ fd66b26, imported by data/gcp/import_cyclenerd.py), and how `select` ranks them."""

from __future__ import annotations

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.offers import Requirement, rank

CAT = load_catalog()
SIZES = {"g4-standard-48": 1, "g4-standard-96": 2, "g4-standard-192": 4, "g4-standard-384": 8}
# The 20 regions pricing.yml @ fd66b26 prices G4 in. machinetyperegion.csv @ 8bf3293 also lists asia-northeast1 (and
# southamerica-east1 for g4-standard-384), which the snapshot does not price: no row there.
REGIONS = {"asia-east1", "asia-south1", "asia-south2", "asia-southeast1", "asia-southeast2", "europe-north1",
           "europe-west1", "europe-west10", "europe-west2", "europe-west4", "europe-west8", "me-central2", "us-central1",
           "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west3", "us-west4"}


def rows(name: str) -> list:
    return [p for p in CAT.raw_prices if p.cloud == "gcp" and p.instance_type == name]


@pytest.mark.parametrize("name", SIZES)
def test_g4_rows_load_without_sanity_flags(name):
    assert ("gcp", name) in CAT.instances
    assert list(CAT.flags_of("gcp", name)) == []


# vcpus / memory_gib: machinetypes.csv @ dac3128; network_gbps: the third-party table the rows mark `unverified`.
@pytest.mark.parametrize("name, gpus, vcpus, memory, gbps", [
    ("g4-standard-48", 1, 48, 180, 50), ("g4-standard-96", 2, 96, 360, 100),
    ("g4-standard-192", 4, 192, 720, 200), ("g4-standard-384", 8, 384, 1440, 400)])
def test_g4_facts(name, gpus, vcpus, memory, gbps):
    row = CAT.instance("gcp", name)
    assert (row.gpu, row.gpus, row.gpu_memory_gib, row.vcpus, row.memory_gib, row.network_gbps) == (
        "RTX-PRO-6000", gpus, 96, vcpus, memory, gbps)
    assert (row.fabric, row.nvswitch, row.gpu_nics) == (None, False, 0)
    assert row.extra["accelerator_type"] == "nvidia-rtx-pro-6000"
    assert row.extra["boot_disk_type"] == "hyperdisk-balanced"  # G4 takes no Persistent Disk (pd-ssd, pd-balanced)
    assert row.extra["host_nics"] == 1
    assert "network_gbps" in row.unverified and "third-party" in row.unverified


def test_the_fractional_sizes_are_vgpu_slices_left_out_of_whole_gpu_queries():
    slices = {name: CAT.instance("gcp", name) for name in ("g4-standard-6", "g4-standard-12", "g4-standard-24")}
    assert {n: (i.gpu_fraction, i.gpu_memory_gib) for n, i in slices.items()} == {
        "g4-standard-6": (0.125, 12), "g4-standard-12": (0.25, 24), "g4-standard-24": (0.5, 48)}
    whole = rank(Requirement(gpus=("RTX-PRO-6000",), clouds=("gcp",)), CAT)
    assert not {o.candidate.instance.name for o in whole.offers} & set(slices)


@pytest.mark.parametrize("name", SIZES)
def test_g4_is_priced_region_wide_in_the_snapshots_regions_by_the_dated_source(name):
    priced = rows(name)
    assert {p.region for p in priced} == REGIONS and len(priced) == len(REGIONS)
    assert all(p.zone == "" and p.source == "cyclenerd" for p in priced)
    source = CAT.source_of_key("gcp", "cyclenerd")
    assert source.snapshot_date.isoformat() == "2026-07-30" and "fd66b26" in source.source


# Checked by hand against pricing.yml @ fd66b26 (compute.instance.<type>.cost.<region>: hour, hour_spot,
# month_1y / 730, month_3y / 730), rounded to 5 places as the importer does.
@pytest.mark.parametrize("name, region, prices", [
    ("g4-standard-48", "us-central1", (4.49993, 1.79982, 3.105, 1.97945)),
    ("g4-standard-96", "europe-west4", (9.89985, 3.96, 6.831, 4.35479)),
    ("g4-standard-192", "asia-southeast2", (24.20423, 9.68176, 16.70114, 10.64682)),
    ("g4-standard-384", "us-central1", (35.99944, 14.39856, 24.84, 15.8356)),
    ("g4-standard-384", "europe-west10", (43.1928, 17.2844, None, 19.00696))])  # no 1-year commitment there
def test_rows_match_the_snapshot(name, region, prices):
    [row] = [p for p in rows(name) if p.region == region]
    assert (row.on_demand, row.spot, row.reserved_1y, row.reserved_3y) == prices


def test_us_central1_g4_standard_48_matches_the_live_price_dstack_saw():
    [row] = [p for p in rows("g4-standard-48") if p.region == "us-central1"]
    assert row.on_demand == pytest.approx(4.5001, abs=0.001)  # dstack PR #3213's offer listing


@pytest.mark.parametrize("name", SIZES)
def test_every_size_costs_its_gpu_count_times_the_one_gpu_size(name):
    """G4 is billed as vCPU + RAM + GPU SKUs, and each size is N x g4-standard-48: a row off that line is a
    mis-import."""
    single = {p.region: p for p in rows("g4-standard-48")}
    for price in rows(name):
        one = single[price.region]
        assert price.on_demand == pytest.approx(SIZES[name] * one.on_demand, rel=1e-5), price.region
        assert price.spot == pytest.approx(SIZES[name] * one.spot, rel=1e-5), price.region


@pytest.mark.parametrize("market, top_price", [("spot", 14.39856), ("on-demand", 35.99944)])
def test_select_ranks_g4_at_the_imported_price(market, top_price):
    ranking = rank(Requirement(gpus=("RTX-PRO-6000",), gpus_per_node=8, market=market, clouds=("gcp",)), CAT)
    top = ranking.offers[0]
    assert top.candidate.instance.name == "g4-standard-384"
    assert (top.candidate.region, top.candidate.zone) == ("us-central1", "")
    assert top.usd_per_hour == pytest.approx(top_price)
    assert {o.candidate.instance.name for o in ranking.offers} == {"g4-standard-384"}
    assert len(ranking.offers) == len(REGIONS)


def test_across_clouds_g4_spot_is_the_cheapest_eight_gpu_rtx_pro_6000():
    """AWS g7e has no spot price in the catalog, so every spot offer for 8 x RTX PRO 6000 is a G4 one."""
    offers = rank(Requirement(gpus=("RTX-PRO-6000",), gpus_per_node=8, market="spot"), CAT).offers
    assert offers and {o.candidate.instance.cloud for o in offers} == {"gcp"}


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_smaller_sizes_are_offered_per_gpu_count(gpus):
    [name] = [n for n, count in SIZES.items() if count == gpus]
    offers = rank(Requirement(gpus=("RTX-PRO-6000",), gpus_per_node=gpus, clouds=("gcp",)), CAT).offers
    assert offers and {o.candidate.instance.name for o in offers} == {name}


def test_nvidias_spelling_names_the_gpu_and_a_typo_gets_one_suggestion():
    assert CAT.gpu("RTX PRO 6000").model == "RTX-PRO-6000"
    assert CAT.gpu_suggestions("RTX PRO 600") == ["RTX-PRO-6000"]  # once, not once per alias
