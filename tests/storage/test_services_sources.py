"""What each shared-filesystem row claims about its own sources (services.yaml): a price marked verified says where it
was read; an unverified one is printed as such in the cost table; re-read sizing limits are enforced."""

from __future__ import annotations

import pytest

from gpufleet.storage.catalog import _table, storage_service
from gpufleet.storage.cost import storage_cost_lines

ROWS = [(cloud, kind) for cloud in ("aws", "azure", "gcp") for kind in ("lustre", "nfs")]


@pytest.mark.parametrize(("cloud", "kind"), ROWS)
def test_a_verified_price_names_where_it_was_read_and_an_unverified_one_says_so(cloud, kind):
    row = _table()[cloud][kind]
    service = storage_service(cloud, kind)
    if service.verified:
        assert "read from" in row["price_note"] and service.price_date in row["price_note"]
    tier = service.default_tier
    cost = {"service": service.service, "capacity_gib": 1000, "tier": tier, "usd_per_month": 1.0, "usd_per_hour": 0.001,
            "source": service.price_source, "date": service.price_date, "region": service.price_region,
            "verified": service.verified}
    note = storage_cost_lines({"shared_filesystem": {"cost": cost}})[1]
    assert ("not re-verified" in note) is (not service.verified)


@pytest.mark.parametrize(("cloud", "kind"), ROWS)
def test_every_checked_fact_names_its_source_and_the_day_it_was_read(cloud, kind):
    for fact in _table()[cloud][kind].get("checked", []):
        assert "read 2026-" in fact or "components/" in fact, fact


def test_fsx_prices_and_regions_are_the_recorded_price_list_rows():
    """services.yaml's FSx PERSISTENT_2 rows against the recorded copy of aws-samples/sample-fsx-viewer's Price List
    extract: every region offered has all four tiers, each priced as recorded, and no recorded region is missing."""
    import json
    from pathlib import Path

    recorded = json.loads((Path(__file__).parent / "fixtures" / "fsx_lustre_persistent_2_prices.json").read_text())
    rows = {region: {int(tier): price for tier, price in tiers.items()}
            for region, tiers in recorded["lustre_persistent_2_ssd"].items() if len(tiers) == 4}
    service = storage_service("aws", "lustre")
    assert service.price_source == recorded["source"] and service.price_date == recorded["last_updated"]
    assert set(service.regions or ()) == set(rows) == set(service.prices_by_region)
    for region, tiers in rows.items():
        assert {tier: service.price_per_gib_month(tier, region) for tier in service.tiers} == tiers, region
    assert service.prices == rows[service.price_region]
    assert "il-central-1" not in rows and len(recorded["lustre_persistent_2_ssd"]["il-central-1"]) == 2


def test_amlfs_sku_maximums_from_microsofts_table():
    service = storage_service("azure", "lustre")
    assert service.sizing(250).accepts(128 * 1024) and not service.sizing(250).accepts(136 * 1024)
    assert service.sizing(40).accepts(768 * 1024) and not service.sizing(40).accepts(816 * 1024)


def test_amlfs_subnet_prefix_matches_the_subnet_azure_creates():
    from ipaddress import IPv4Network

    from gpufleet.azure.storage import storage_subnet_cidr
    from gpufleet.spec.storage_rules import amlfs_subnet_prefix

    for cidr in ("10.0.0.0/16", "10.0.0.0/22", "10.0.0.0/23", "10.0.0.0/24", "10.0.0.0/25"):
        assert storage_subnet_cidr(IPv4Network(cidr)).prefixlen == amlfs_subnet_prefix(IPv4Network(cidr).prefixlen)
