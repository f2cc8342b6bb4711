"""The storage services table: sizes per service, and the shared filesystem's line in the cost table."""

from __future__ import annotations

import pytest

from gpufleet.spec import parse_cluster_spec
from gpufleet.storage.catalog import storage_service
from gpufleet.storage.cost import shared_filesystem_output, storage_cost_lines

DEV = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 1, "accelerator": {"instance_type": "g6e.xlarge"}}


@pytest.mark.parametrize(("cloud", "kind"), [(c, k) for c in ("aws", "azure", "gcp") for k in ("lustre", "nfs")])
def test_every_service_row_has_a_price_with_source_and_date(cloud, kind):
    service = storage_service(cloud, kind)
    prices = [service.price_per_gib_month(tier) for tier in service.tiers or (None,)]
    assert any(prices) and all(price is None or price > 0 for price in prices)
    assert service.price_source.startswith("https://") and len(service.price_date) == 10


def test_a_tier_without_a_public_price_is_unknown_never_zero(monkeypatch):
    """A tier the catalog has no price for (here Managed Lustre 250, taken out of a copy of the table) is unknown."""
    import copy

    from gpufleet.storage import catalog as storage_catalog

    table = copy.deepcopy(storage_catalog._table())
    del table["gcp"]["lustre"]["price_per_gib_month"][250]
    monkeypatch.setattr(storage_catalog, "_table", lambda: table)
    gcp = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 1,
           "accelerator": {"instance_type": "g2-standard-4"}, "image": {"kind": "ubuntu-22.04"}}
    output = shared_filesystem_output(parse_cluster_spec(
        {**gcp, "storage": {"shared": {"kind": "lustre", "capacity_gib": 36000, "throughput": 250}}}))
    assert output["cost"]["usd_per_month"] is None and output["cost"]["usd_per_hour"] is None
    lines = storage_cost_lines({"shared_filesystem": output, "estimated_usd_per_month": 1000.0})
    assert "36,000 GiB at 250 MB/s/TiB: no list price for this tier in the catalog" in lines[0]
    assert len(lines) == 2 and "https://cloud.google.com/managed-lustre/pricing" in lines[1]  # no total line
    priced = shared_filesystem_output(parse_cluster_spec(
        {**gcp, "storage": {"shared": {"kind": "lustre", "capacity_gib": 72000, "throughput": 125}}}))
    assert priced["cost"]["usd_per_month"] == round(72000 * 0.145, 2)


def test_fsx_sizing_accepts_1200_2400_then_multiples_of_2400():
    sizing = storage_service("aws", "lustre").sizing(250)
    assert [size for size in (1200, 2400, 3600, 4800, 6000, 7200) if sizing.accepts(size)] == [1200, 2400, 4800, 7200]


def test_cost_line_is_capacity_times_the_catalog_price():
    spec = parse_cluster_spec({**DEV, "storage": {"shared": {"kind": "lustre", "capacity_gib": 4800, "throughput": 500}}})
    output = shared_filesystem_output(spec)
    assert output["cost"]["usd_per_month"] == round(4800 * 0.34, 2)
    lines = storage_cost_lines({"shared_filesystem": output, "estimated_usd_per_month": 1000.0})
    assert lines[0].endswith("$1,632.00/month ($2.2356/hour)")
    assert lines[1].startswith("  list price in us-east-1 from https://github.com/aws-samples/sample-fsx-viewer/")
    assert lines[1].endswith("pricing_data.json (2026-02-17)")  # verified: no refresh warning
    assert lines[2].endswith("$2,632.00/month")


def test_fsx_is_priced_in_the_stacks_own_region():
    """London's PERSISTENT_2 500 MB/s/TiB is $0.467/GB-month against Virginia's $0.34: the line says which it used."""
    london = {**DEV, "region": "eu-west-2", "zone": "euw2-az2"}
    output = shared_filesystem_output(parse_cluster_spec(
        {**london, "storage": {"shared": {"kind": "lustre", "capacity_gib": 4800, "throughput": 500}}}))
    assert output["cost"]["usd_per_month"] == round(4800 * 0.467, 2) and output["cost"]["region"] == "eu-west-2"
    assert storage_cost_lines({"shared_filesystem": output})[1].startswith("  list price in eu-west-2 from ")


def test_a_region_without_its_own_price_names_the_region_it_was_priced_in():
    service = storage_service("azure", "nfs")
    assert service.priced_region("eastus") == "northeurope"
    assert service.price_per_gib_month(None, "eastus") == service.price_per_gib_month(None)


def test_elastic_and_existing_filesystems_have_no_priced_line():
    efs = shared_filesystem_output(parse_cluster_spec({**DEV, "storage": {"shared": {"kind": "nfs"}}}))
    assert efs["cost"] is None and "elastic" in storage_cost_lines({"shared_filesystem": efs})[0]
    existing = parse_cluster_spec({**DEV, "storage": {"shared": {"kind": "lustre", "existing_id": "fs-0123456789abcdef0"}}})
    assert shared_filesystem_output(existing)["cost"] is None
    assert storage_cost_lines({"shared_filesystem": None}) == []
