"""Each sanity check refuses the row it should, says why, and keeps it out of selection."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.checks import excluded_flags
from gpufleet.catalog.models import FLAG_SCOPES

from .helpers import catalog, instance, price


def kinds(cat):
    return {(f.instance_type, f.region, f.zone, f.scope, f.kind) for f in cat.flags}


class TestInstanceChecks:
    def test_gpu_count_the_gpu_is_not_sold_in_is_flagged_and_dropped(self):
        cat = catalog([instance(cloud="azure", name="Standard_ND96isr_H100_v5", gpus=12)], [])
        assert ("Standard_ND96isr_H100_v5", "", "", "row", "gpu-count") in kinds(cat)
        assert cat.instance("azure", "Standard_ND96isr_H100_v5") is None
        assert cat.instances_of("azure", "H100") == []
        assert "12 x H100" in cat.flags[0].reason

    def test_gpu_memory_contradicting_the_spec_is_flagged(self):
        cat = catalog([instance(name="x.big", memory=40)], [])
        assert ("x.big", "", "", "row", "gpu-memory") in kinds(cat)

    def test_memory_within_gb_gib_tolerance_passes(self):
        cat = catalog([instance(name="g.xl", gpu="T4", gpus=1, memory=15, fabric=None)], [])
        assert cat.flags == ()

    @pytest.mark.parametrize("fabric, efa, cards", [("efa", 0, 4), (None, 1, 1), ("efa", 40, 32)])
    def test_efa_interfaces_that_do_not_fit_the_fabric_are_flagged(self, fabric, efa, cards):
        cat = catalog([instance(name="x.big", fabric=fabric, efa_interfaces=efa, network_cards=cards)], [])
        assert ("x.big", "", "", "row", "network-layout") in kinds(cat)

    def test_unknown_gpu_is_flagged(self):
        cat = catalog([instance(name="x.big", gpu="Z9000")], [])
        assert ("x.big", "", "", "row", "unknown-gpu") in kinds(cat)

    def test_prices_of_a_flagged_type_are_not_selectable(self):
        cat = catalog([instance(gpus=12)], [price()])
        assert cat.prices_of("aws", "p5.48xlarge") == []
        assert len(cat.raw_prices) == 1


class TestPriceChecks:
    def test_spot_above_on_demand_is_flagged_and_removed(self):
        cat = catalog([instance()], [price(od=14.77, spot=15.71)])
        assert ("p5.48xlarge", "us-east-1", "use1-az1", "spot", "spot-above-on-demand") in kinds(cat)
        [row] = cat.prices_of("aws", "p5.48xlarge")
        assert (row.on_demand, row.spot) == (14.77, None)

    @pytest.mark.parametrize("market", ["on_demand", "spot", "reserved_1y", "reserved_3y"])
    @pytest.mark.parametrize("value", [0.0, -1.0])
    def test_a_price_of_zero_or_below_is_treated_as_missing(self, market, value):
        row = replace(price(od=50.0, spot=20.0, reserved_1y=30.0, reserved_3y=25.0), **{market: value})
        cat = catalog([instance()], [row])
        assert ("p5.48xlarge", "us-east-1", "use1-az1", market, "price-not-positive") in kinds(cat)
        [clean] = cat.prices_of("aws", "p5.48xlarge")
        assert getattr(clean, market) is None
        assert [m for m in ("on_demand", "spot", "reserved_1y", "reserved_3y") if getattr(clean, m) is None] == [market]

    def test_spot_above_on_demand_within_rounding_passes(self):
        cat = catalog([instance()], [price(od=10.0, spot=10.05)])
        assert not any(f.kind == "spot-above-on-demand" for f in cat.flags)

    def test_spot_equal_to_on_demand_is_treated_as_missing(self):
        cat = catalog([instance()], [price(od=98.32, spot=98.32)])
        assert ("p5.48xlarge", "us-east-1", "use1-az1", "spot", "spot-equals-on-demand") in kinds(cat)
        assert cat.prices_of("aws", "p5.48xlarge")[0].spot is None

    def test_zone_row_without_on_demand_compares_with_its_region(self):
        rows = [price(zone="", od=10.0, spot=None), price(zone="use1-az2", od=None, spot=12.0)]
        cat = catalog([instance()], rows)
        assert ("p5.48xlarge", "us-east-1", "use1-az2", "spot", "spot-above-on-demand") in kinds(cat)

    def test_on_demand_far_below_the_other_regions_is_flagged(self):
        regions = {"r1": 87.8, "r2": 86.3, "r3": 92.5, "r4": 43.07}
        cat = catalog([instance(cloud="gcp", name="a3-highgpu-8g")],
                      [price(cloud="gcp", name="a3-highgpu-8g", region=r, zone=f"{r}-a", od=v, spot=20.0)
                       for r, v in regions.items()])
        assert ("a3-highgpu-8g", "r4", "", "on_demand", "on-demand-outlier") in kinds(cat)
        assert [f.region for f in cat.flags if f.kind == "on-demand-outlier"] == ["r4"]
        assert cat.prices_of("gcp", "a3-highgpu-8g", "r4")[0].on_demand is None

    def test_on_demand_far_above_is_flagged(self):
        regions = {"r1": 10.0, "r2": 11.0, "r3": 10.5, "r4": 25.0}
        cat = catalog([instance()], [price(region=r, zone="", od=v, spot=None) for r, v in regions.items()])
        assert [f.region for f in cat.flags if f.kind == "on-demand-outlier"] == ["r4"]

    def test_outliers_need_three_regions(self):
        cat = catalog([instance()], [price(region="r1", od=10.0, spot=None), price(region="r2", od=30.0, spot=None)])
        assert cat.flags == ()

    def test_spot_is_judged_against_on_demand_not_against_other_zones(self):
        spots = {"az1": 2.4, "az2": 8.2, "az3": 8.1, "az4": 7.9, "az5": 1.9}  # 89% and 91% off
        cat = catalog([instance()], [price(zone=z, od=22.0, spot=s) for z, s in spots.items()])
        assert [f.zone for f in cat.flags if f.kind == "spot-ratio"] == ["az5"]

    def test_the_same_discount_gets_the_same_verdict_everywhere(self):
        """Cross-check: every spot price of the shipped catalog is flagged by the ratio rule exactly when its
        discount is past its cloud's floor, whatever the type, region or number of zones listed."""
        from gpufleet.catalog import load_catalog
        from gpufleet.catalog.checks import SPOT_RATIO, SPOT_RATIO_ROUNDING
        shipped = load_catalog()
        flagged = {(f.cloud, f.instance_type, f.region, f.zone) for f in shipped.flags if f.kind == "spot-ratio"}
        verdicts: dict = {}
        for p in shipped.raw_prices:
            if p.spot and p.on_demand and p.spot < p.on_demand * 0.99:
                ratio = round(p.spot / p.on_demand, 3)
                refused = (p.cloud, p.instance_type, p.region, p.zone) in flagged
                assert refused == (p.spot / p.on_demand < SPOT_RATIO[p.cloud] - SPOT_RATIO_ROUNDING), p
                verdicts.setdefault((p.cloud, ratio), set()).add(refused)
        assert all(len(v) == 1 for v in verdicts.values())
        for floor in SPOT_RATIO.values():  # 89% off passes on every cloud (p4d use1-az1, Azure A100)
            assert floor <= 0.11


class TestExcludedByTheDataFile:
    def test_string_and_mapping_entries(self):
        flags = excluded_flags("gcp", ["a2-ultragpu-8g us-central1: GPU spot above GPU on-demand in the source",
                                       {"instance_type": "a3-highgpu-8g", "region": "us-central1", "scope": "on_demand",
                                        "reason": "H100 GPU SKU mismatched"}])
        assert [(f.instance_type, f.region, f.scope, f.kind) for f in flags] == [
            ("a2-ultragpu-8g", "us-central1", "row", "excluded"),
            ("a3-highgpu-8g", "us-central1", "on_demand", "excluded")]

    def test_excluded_row_is_dropped(self):
        flags = excluded_flags("aws", ["p5.48xlarge us-east-1: test"])
        cat = catalog([instance()], [price(), price(region="us-west-2", zone="usw2-az1")], flags=flags)
        assert [p.region for p in cat.prices_of("aws", "p5.48xlarge")] == ["us-west-2"]


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


class TestShippedCatalog:
    def test_every_flag_has_a_reason_and_a_known_scope(self, cat):
        assert all(f.reason and f.scope in FLAG_SCOPES for f in cat.flags)

    def test_every_price_row_is_of_a_known_type_and_listed_once(self, cat):
        """A typo in an instance type would silently drop its prices: selection only walks instances.yaml."""
        known = {*cat.instances, *cat.flagged_instances}
        assert [p for p in cat.raw_prices if (p.cloud, p.instance_type) not in known] == []
        keys = [(p.cloud, p.instance_type, p.region, p.zone, p.source) for p in cat.raw_prices]
        assert len(keys) == len(set(keys))

    def test_no_selectable_spot_price_is_at_or_above_on_demand(self, cat):
        for p in cat.prices:
            region_od = [q.on_demand for q in cat.prices_of(p.cloud, p.instance_type, p.region) if q.on_demand]
            if p.spot is not None and region_od:
                assert p.spot < max(region_od), p

    def test_no_selectable_instance_contradicts_its_gpu(self, cat):
        for row in cat.instances.values():
            gpu = cat.gpus[row.gpu]
            expected = gpu.memory_gib * row.gpu_fraction  # a vGPU slice has its share of the GPU's memory
            assert row.gpus in gpu.node_gpu_counts and abs(row.gpu_memory_gib - expected) <= 0.1 * expected

    def test_aws_sources_agree_on_on_demand(self, cat):
        """The two AWS sources (SkyPilot per AZ, instances.vantage.sh per region) give the same on-demand price."""
        by_key = {}
        for p in cat.raw_prices:
            if p.cloud == "aws" and p.on_demand is not None:
                by_key.setdefault((p.instance_type, p.region, p.source), set()).add(p.on_demand)
        for (name, region, src), values in by_key.items():
            if src == "skypilot" and (name, region, "vantage") in by_key:
                [vantage] = by_key[(name, region, "vantage")]
                assert values == {vantage}, (name, region, values, vantage)
