"""Cost outputs: the market arithmetic on chosen numbers, and the cost table of real selections."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from gpufleet.catalog.age import (
    STALE_AFTER_DAYS,
    catalog_age_days,
    catalog_age_line,
    catalog_age_notes,
    catalog_age_warning,
)
from gpufleet.catalog.cost import (
    HOURS_PER_MONTH,
    NodePrices,
    cost_table_lines,
    hourly_cost,
    market_costs,
)
from gpufleet.catalog.models import PriceSource
from gpufleet.catalog.selection_cost import cluster_cost, cost_table
from gpufleet.catalog.selector import select
from gpufleet.spec.parse import parse_cluster_spec

from .helpers import catalog, instance, price, source

PRICES = NodePrices(on_demand=10.0, spot=3.0, reserved_1y=6.3, reserved_3y=None)


class TestHourlyCost:
    @pytest.mark.parametrize("market, base, expected", [
        ("on-demand", 0, 40.0), ("spot", 0, 12.0), ("mixed", 1, 10.0 + 3 * 3.0), ("mixed", 4, 40.0),
        ("mixed", 0, 12.0), ("reserved-1y", 0, 25.2), ("reserved-3y", 0, None)])
    def test_markets(self, market, base, expected):
        result = hourly_cost(market, 4, PRICES, base)
        assert result == pytest.approx(expected) if expected is not None else result is None

    def test_mixed_without_spot_price_is_unknown(self):
        assert hourly_cost("mixed", 4, NodePrices(on_demand=10.0, spot=None), 1) is None

    def test_mixed_all_on_demand_needs_no_spot_price(self):
        assert hourly_cost("mixed", 2, NodePrices(on_demand=10.0, spot=None), 2) == 20.0


class TestMarketCosts:
    def test_rows_savings_and_month(self):
        rows = {r["market"]: r for r in market_costs(4, PRICES, "spot")}
        assert list(rows) == ["on-demand", "spot", "mixed", "reserved-1y", "reserved-3y"]
        assert rows["on-demand"]["usd_per_month"] == 40.0 * HOURS_PER_MONTH
        assert rows["spot"] == {"market": "spot", "label": "spot", "chosen": True, "on_demand_nodes": 0,
                                "spot_nodes": 4, "usd_per_hour": 12.0, "usd_per_month": 8760.0, "savings_pct": 70.0,
                                "note": ""}
        assert rows["mixed"]["label"] == "mixed (2 on-demand + 2 spot)"
        assert rows["mixed"]["savings_pct"] == 35.0
        assert rows["reserved-1y"]["savings_pct"] == 37.0
        assert rows["reserved-3y"]["usd_per_hour"] is None and rows["reserved-3y"]["note"]
        assert rows["on-demand"]["savings_pct"] == 0.0

    def test_mixed_uses_the_stacks_base(self):
        rows = {r["market"]: r for r in market_costs(8, PRICES, "mixed", on_demand_base=2)}
        assert rows["mixed"]["chosen"] and rows["mixed"]["usd_per_hour"] == 2 * 10.0 + 6 * 3.0

    def test_mixed_comparison_rounds_an_odd_base_up(self):
        rows = {r["market"]: r for r in market_costs(3, PRICES, "spot")}
        assert rows["mixed"]["label"] == "mixed (2 on-demand + 1 spot)"
        assert rows["mixed"]["usd_per_hour"] == 2 * 10.0 + 3.0 and rows["mixed"]["savings_pct"] == 23.3

    def test_three_year_reserved_arithmetic(self):
        rows = {r["market"]: r for r in market_costs(2, NodePrices(on_demand=10.0, spot=3.0, reserved_3y=4.4), "spot")}
        assert rows["reserved-3y"]["usd_per_hour"] == 8.8 and rows["reserved-3y"]["savings_pct"] == 56.0
        assert rows["reserved-3y"]["usd_per_month"] == 6424.0 and rows["reserved-3y"]["note"] == ""

    def test_no_on_demand_price_means_no_savings(self):
        rows = market_costs(2, NodePrices(on_demand=None, spot=5.0), "spot")
        assert [r["savings_pct"] for r in rows] == [None] * 5

    def test_lines_mark_the_chosen_market(self):
        lines = cost_table_lines(market_costs(4, PRICES, "spot"))
        assert lines[2].startswith("*spot") and "70.0%" in lines[2] and "n/a" in lines[5]


def spec(**overrides):
    base = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az2", "nodes": 2,
            "accelerator": {"instance_type": "p4d.24xlarge"}, "market": "spot"}
    return parse_cluster_spec({**base, **overrides})


class TestCostTableOnKnownRows:
    """p4d.24xlarge us-east-1: on-demand 21.957642 (both sources), spot use1-az2 8.1915, 1-year RI 13.921094."""

    def test_p4d_spot_in_use1_az2(self):
        selection = select(spec())
        rows = {r["market"]: r for r in cost_table(selection)}
        assert rows["on-demand"]["usd_per_hour"] == round(2 * 21.957642, 2)
        assert rows["spot"]["usd_per_hour"] == round(2 * 8.1915, 2) and rows["spot"]["chosen"]
        assert rows["reserved-1y"]["usd_per_hour"] == round(2 * 13.921094, 2)
        assert rows["reserved-1y"]["savings_pct"] == round(100 * (1 - 13.921094 / 21.957642), 1) == 36.6
        assert rows["reserved-3y"]["usd_per_hour"] is None
        assert rows["mixed"]["usd_per_hour"] == round(21.957642 + 8.1915, 2)
        assert cluster_cost(selection).usd_per_hour == rows["spot"]["usd_per_hour"]

    def test_is_deterministic(self):
        assert cost_table(select(spec())) == cost_table(select(spec()))


class TestFreshness:
    def test_age_and_warning_use_the_oldest_source(self):
        cat = catalog([instance()], [price(), price(cloud="gcp", source="b")],
                      [source("aws", date(2026, 11, 1)), source("gcp", date(2026, 10, 1)),
                       source("gcp", date(2026, 9, 1), key="b")])
        today = date(2026, 11, 21)
        assert catalog_age_days(today, cat, "aws") == 20
        assert catalog_age_days(today, cat) == 81
        assert catalog_age_warning(today, cat, "aws") is None
        assert "2026-09-01 (81 days old" in catalog_age_warning(today, cat)
        assert catalog_age_line(today, cat, "gcp") == "catalog prices for gcp from 2026-09-01 (81 days old)"

    def test_the_line_names_every_source_in_use_newest_first(self):
        unknown = PriceSource(cloud="gcp", source="undated gcp", snapshot_date=None)
        cat = catalog([instance()], [price(cloud="gcp"), price(cloud="gcp", source="b"),
                                     price(cloud="gcp", source="c")],
                      [unknown, source("gcp", date(2026, 7, 30), key="b"), source("gcp", date(2026, 7, 30), key="c"),
                       source("gcp", date(2020, 1, 1), key="unused")])
        today = date(2026, 12, 3)
        assert catalog_age_line(today, cat, "gcp") == (
            "catalog prices for gcp from 2026-07-30 (126 days old) and from an undated snapshot (age unknown)")
        assert "have no recorded date (their age is unknown)" in catalog_age_warning(today, cat, "gcp")

    def test_a_plans_location_is_dated_by_the_rows_that_price_it(self):
        unknown = PriceSource(cloud="gcp", source="undated gcp", snapshot_date=None)
        cat = catalog([instance()], [price(cloud="gcp", name="a3-megagpu-8g", region="us-central1",
                                           zone="us-central1-a"),
                                     price(cloud="gcp", name="g2-standard-8", region="us-central1", zone="us-central1-a",
                                           source="b"),
                                     price(cloud="gcp", name="g2-standard-8", region="us-east4", zone="")],
                      [unknown, source("gcp", date(2026, 7, 30), key="b")])
        today = date(2026, 12, 3)
        notes = catalog_age_notes(today, "gcp", cat, location=("g2-standard-8", "us-central1", "us-central1-a"))
        assert notes[1:] == [
            "catalog prices for gcp (g2-standard-8 in us-central1-a) from 2026-07-30 (126 days old)",
            "warning: the catalog's gcp prices for g2-standard-8 in us-central1-a date from 2026-07-30 (126 days old; "
            "older than 30); costs may be off. Refresh with `gpufleet catalog refresh --cloud gcp`"]
        region_wide = catalog_age_line(today, cat, "gcp", ("g2-standard-8", "us-east4", "us-east4-a"))
        assert region_wide == "catalog prices for gcp (g2-standard-8 in us-east4-a) from an undated snapshot (age unknown)"
        unpriced = catalog_age_notes(today, "gcp", cat, location=("a4-highgpu-8g", "us-central1", "us-central1-b"))
        assert unpriced[1] == ("catalog prices for gcp from 2026-07-30 (126 days old) and from an undated snapshot "
                               "(age unknown)")

    def test_an_undated_source_counts_from_its_earliest_possible_date(self):
        undated = PriceSource(cloud="aws", source="undated aws", snapshot_date=None, not_before=date(2025, 6, 1))
        cat = catalog([instance()], [price()], [undated])
        today = date(2026, 12, 3)
        assert catalog_age_days(today, cat, "aws") == 550
        assert catalog_age_line(today, cat, "aws") == (
            "catalog prices for aws from an undated snapshot, not before 2025-06-01 (up to 550 days old)")
        assert "have no recorded date; they are from 2025-06-01 or later (up to 550 days old)" in (
            catalog_age_warning(today, cat, "aws"))

    def test_an_undated_source_without_a_bound_always_warns_and_ranks_oldest(self):
        unknown = PriceSource(cloud="gcp", source="undated gcp", snapshot_date=None, key="b")
        cat = catalog([instance()], [price(), price(cloud="gcp", source="b")],
                      [source("aws", date(2026, 12, 1)), unknown])
        today = date(2026, 12, 3)
        assert catalog_age_days(today, cat, "gcp") is None
        assert catalog_age_line(today, cat, "gcp") == "catalog prices for gcp from an undated snapshot (age unknown)"
        assert "have no recorded date (their age is unknown)" in catalog_age_warning(today, cat, "gcp")
        assert catalog_age_warning(today, cat, "aws") is None
        assert "age unknown" in catalog_age_line(today, cat)  # the oldest of every cloud's is the undated one

    def test_warning_starts_after_the_limit(self):
        cat = catalog([instance()], [price()], [source("aws", date(2026, 11, 1))])
        start = date(2026, 11, 1)
        assert catalog_age_warning(start + timedelta(days=STALE_AFTER_DAYS), cat) is None
        assert catalog_age_warning(start + timedelta(days=STALE_AFTER_DAYS + 1), cat) is not None

    def test_shipped_catalog_is_stale_on_the_deadline_day(self):
        assert "days old" in catalog_age_warning(date(2026, 12, 2), cloud="aws")
