"""`rank`: cross-checked against brute force over the shipped catalog, plus zones, speed and explanations."""

from __future__ import annotations

import random
from datetime import date

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.cost import MARKETS, NodePrices, hourly_cost
from gpufleet.catalog.offers import FABRICS, Requirement, rank
from gpufleet.catalog.zones import is_edge, zone_kind

from .helpers import catalog, instance, price

CAT = load_catalog()
RDMA = FABRICS["rdma"]


def _rows_by_type(rows):
    grouped = {}
    for p in rows:
        grouped.setdefault((p.cloud, p.instance_type), []).append(p)
    return grouped


RAW, CLEAN = _rows_by_type(CAT.raw_prices), _rows_by_type(CAT.prices)


def brute_force(req: Requirement, cat) -> tuple[int, object]:
    """Feasible (type, location) count and the best objective, by plain loops over the catalog's rows."""
    best, count = None, 0
    for (cloud, name), inst in cat.instances.items():
        raw = RAW.get((cloud, name), [])
        for region in sorted({p.region for p in raw}):
            zones = sorted({p.zone for p in raw if p.region == region and p.zone}) or [""]
            clean = [p for p in CLEAN.get((cloud, name), []) if p.region == region]
            for zone in zones:
                def top(field, rows):
                    values = [getattr(p, field) for p in rows if getattr(p, field) is not None]
                    return max(values) if values else None
                own = [p for p in clean if p.zone == zone and p.spot is not None]
                prices = NodePrices(on_demand=top("on_demand", clean),
                                    spot=top("spot", own or [p for p in clean if p.zone == ""]),
                                    reserved_1y=top("reserved_1y", clean), reserved_3y=top("reserved_3y", clean))
                if req.clouds and cloud not in req.clouds or req.regions and region not in req.regions:
                    continue
                if req.gpus and inst.gpu not in req.gpus or req.gpus_per_node not in (None, inst.gpus):
                    continue
                if inst.extra.get("gpu_driver", "nvidia") != "nvidia":  # gpufleet installs NVIDIA's datacenter driver only
                    continue
                on_demand_nodes = req.market == "on-demand" or (req.market == "mixed" and req.on_demand_base > 0)
                if inst.extra.get("on_demand") == "reservation" and on_demand_nodes and not req.reservation:
                    continue  # not sold on demand: only inside a reservation
                if req.min_gpu_memory_gib is not None and inst.gpu_memory_gib < req.min_gpu_memory_gib:
                    continue
                if FABRICS[req.fabric] and inst.fabric not in FABRICS[req.fabric]:
                    continue
                if req.nodes > 1 and req.fabric != "tcp" and inst.fabric and is_edge(cloud, zone):
                    continue
                if not req.include_restricted and (is_edge(cloud, zone) or region.startswith(("us-gov-", "cn-"))):
                    continue
                hourly = hourly_cost(req.market, req.nodes, prices, req.on_demand_base)
                if hourly is None or (req.max_usd_per_hour is not None and hourly > req.max_usd_per_hour):
                    continue
                objective = hourly
                if req.job_gpu_hours is not None:
                    gpu, ref = cat.gpus[inst.gpu], cat.gpus[req.reference_gpu]
                    speed = dict(req.speed_factors).get(inst.gpu) or (
                        gpu.bf16_dense_tflops / ref.bf16_dense_tflops if gpu.bf16_dense_tflops else None)
                    objective = (hourly * req.job_gpu_hours / speed / (inst.gpus * req.nodes)) if speed else None
                count += 1
                if objective is not None and (best is None or objective < best):
                    best = objective
    return count, best


def random_requirement(rng: random.Random) -> Requirement:
    gpus = sorted({i.gpu for i in CAT.instances.values()})
    regions = sorted({p.region for p in CAT.raw_prices})
    market = rng.choice(MARKETS)
    nodes = rng.choice([1, 1, 2, 4, 16])
    return Requirement(
        gpus=tuple(rng.sample(gpus, rng.choice([0, 0, 1, 2, 3]))),
        gpus_per_node=rng.choice([None, None, None, 1, 4, 8, 16]), nodes=nodes, market=market,
        on_demand_base=rng.randint(0, nodes) if market == "mixed" else 0,
        fabric=rng.choice(["auto", "auto", "rdma", "tcp", "efa", "infiniband", "gpudirect"]),
        clouds=tuple(rng.sample(["aws", "azure", "gcp"], rng.choice([0, 0, 1, 2]))),
        regions=tuple(rng.sample(regions, rng.choice([0, 0, 0, 0, 1, 8]))),
        min_gpu_memory_gib=rng.choice([None, None, None, 24, 80]),
        max_usd_per_hour=rng.choice([None, None, None, 50.0, 500.0]),
        job_gpu_hours=rng.choice([None, None, 1000.0]),
        speed_factors=rng.choice([(), (("H100", 3.5),), (("L40S", 0.8), ("T4", 0.21))]),
        include_restricted=rng.choice([False, False, True]))


def test_rank_matches_brute_force_on_generated_requirements():
    rng = random.Random(20261202)
    checked_nonempty = 0
    for _ in range(100):
        req = random_requirement(rng)
        ranking = rank(req, CAT)
        count, best = brute_force(req, CAT)
        assert len(ranking.offers) == count, req
        top = ranking.offers[0] if ranking.offers else None
        got = None if top is None else (top.job_usd if req.job_gpu_hours is not None else top.usd_per_hour)
        assert got == pytest.approx(best) if best is not None else got is None, req
        checked_nonempty += bool(count)
    assert checked_nonempty >= 25  # the generator must produce feasible requirements, not only empty ones


def test_offers_are_sorted_and_every_offer_meets_the_requirement():
    req = Requirement(gpus=("H100",), gpus_per_node=8, nodes=2, market="spot")
    offers = rank(req, CAT).offers
    costs = [o.usd_per_hour for o in offers]
    assert costs == sorted(costs) and len(offers) > 5
    assert {o.candidate.instance.cloud for o in offers} >= {"aws", "gcp"}
    assert all(o.candidate.instance.gpu == "H100" and o.candidate.instance.gpus == 8 for o in offers)


def test_rdma_means_efa_infiniband_or_roce_not_gpudirect_tcpx():
    ranking = rank(Requirement(gpus=("H100",), gpus_per_node=8, nodes=2, market="spot", fabric="rdma"), CAT)
    assert {o.candidate.instance.fabric for o in ranking.offers} == {"efa", "infiniband"}
    tcpx = next(o for o in ranking.rejected if o.candidate.instance.fabric == "tcpx")
    assert tcpx.reasons == ("no RDMA fabric (has tcpx)",)


class TestZones:
    def test_multi_node_rdma_excludes_local_zones_but_single_node_may_use_them_when_asked(self):
        def zones(nodes, include_restricted=True):
            req = Requirement(gpus=("H100",), gpus_per_node=8, nodes=nodes, market="spot",
                              include_restricted=include_restricted)
            return {o.candidate.zone for o in rank(req, CAT).offers}
        assert "use1-atl2-az1" in zones(1)
        assert "use1-atl2-az1" not in zones(1, include_restricted=False)
        assert "use1-atl2-az1" not in zones(2)

    @pytest.mark.parametrize("gpu", ["H100", "H200", "B200"])
    @pytest.mark.parametrize("market", ["on-demand", "spot"])
    @pytest.mark.parametrize("nodes", [1, 2])
    def test_top_pick_is_a_regular_zone_or_region(self, gpu, market, nodes):
        top = rank(Requirement(gpus=(gpu,), gpus_per_node=8, nodes=nodes, market=market), CAT).offers[0].candidate
        assert zone_kind(top.instance.cloud, top.zone) in ("zone", "region"), top
        assert not top.region.startswith(("us-gov-", "cn-")), top

    def test_a_price_tie_goes_to_the_regular_zone(self):
        rows = [price(zone="use1-atl2-az1", spot=None), price(zone="use1-az4", spot=None)]
        cat = catalog([instance()], rows)
        offers = rank(Requirement(gpus=("H100",), include_restricted=True), cat).offers
        assert [o.candidate.zone for o in offers] == ["use1-az4", "use1-atl2-az1"]

    def test_govcloud_is_hidden_by_default_and_says_why(self):
        req = Requirement(gpus=("T4",), regions=("us-gov-west-1",))
        ranking = rank(req, CAT)
        assert not ranking.offers
        assert any("GovCloud" in r for o in ranking.rejected for r in o.reasons)
        assert rank(Requirement(gpus=("T4",), regions=("us-gov-west-1",), include_restricted=True), CAT).offers

    def test_edge_zone_miss_says_why(self):
        req = Requirement(gpus=("H100",), gpus_per_node=8, nodes=2, market="spot", regions=("us-east-1",))
        misses = {o.candidate.zone: o.reasons for o in rank(req, CAT).rejected
                  if o.candidate.instance.name == "p5.48xlarge"}
        assert any("local-zone" in r for r in misses["use1-atl2-az1"])

    def test_price_is_the_zones_own_not_the_cheapest_anywhere(self):
        cat = catalog([instance()], [price(zone="use1-az1", spot=30.0), price(zone="use1-az2", spot=20.0),
                                     price(region="us-west-2", zone="usw2-az1", spot=25.0)])
        req = Requirement(nodes=2, market="spot", regions=("us-east-1",))
        offers = rank(req, cat).offers
        assert [(o.candidate.zone, o.usd_per_hour) for o in offers] == [("use1-az2", 40.0), ("use1-az1", 60.0)]


class TestSpeedAdjustedCost:
    def test_faster_gpu_at_twice_the_price_is_cheaper_per_job(self):
        cat = catalog([instance(name="h", gpu="H100"), instance(name="a", gpu="A100", memory=40)],
                      [price(name="h", od=80.0, spot=None), price(name="a", od=40.0, spot=None)])
        req = Requirement(nodes=1, job_gpu_hours=800.0, reference_gpu="A100")
        by_hour = rank(Requirement(nodes=1), cat).offers
        by_job = rank(req, cat).offers
        assert [o.candidate.instance.name for o in by_hour] == ["a", "h"]
        assert [o.candidate.instance.name for o in by_job] == ["h", "a"]
        h = by_job[0]
        assert h.relative_speed == pytest.approx(989.4 / 312)
        assert h.job_hours == pytest.approx(800 / (989.4 / 312) / 8)
        assert h.job_usd == pytest.approx(80.0 * h.job_hours)

    def test_measured_speed_factor_overrides_tflops(self):
        cat = catalog([instance(name="t", gpu="T4", gpus=1, memory=16, fabric=None)],
                      [price(name="t", od=0.5, spot=None)])
        req = Requirement(job_gpu_hours=100.0, reference_gpu="A100", speed_factors=(("T4", 1 / 4.7),))
        [offer] = rank(req, cat).offers
        assert offer.job_hours == pytest.approx(470.0) and offer.job_usd == pytest.approx(235.0)


class TestInfeasible:
    def test_twelve_h100_per_node_gets_nearest_offers_with_reasons(self):
        ranking = rank(Requirement(gpus=("H100",), gpus_per_node=12, nodes=2), CAT)
        assert ranking.offers == ()
        nearest = ranking.nearest()
        assert len(nearest) == 5 and len({o.candidate.instance.name for o in nearest}) == 5
        assert all(o.reasons and "not 12" in o.reasons[0] for o in nearest)

    def test_azure_h100_spot_is_missing_with_the_flag_reason(self):
        ranking = rank(Requirement(gpus=("H100",), gpus_per_node=8, nodes=2, market="spot", clouds=("azure",),
                                   regions=("eastus",)), CAT)
        assert ranking.offers == ()
        [reason] = ranking.nearest(1)[0].reasons
        assert reason.startswith("no spot price here (flagged:") and "Spot meter" in reason

    def test_azure_h100_spot_is_offered_only_where_a_real_spot_price_exists(self):
        ranking = rank(Requirement(gpus=("H100",), gpus_per_node=8, nodes=2, market="spot", clouds=("azure",)), CAT)
        assert [(o.candidate.region, o.usd_per_hour) for o in ranking.offers] == [
            ("swedencentral", 2 * 23.620397), ("westeurope", 2 * 23.620397), ("northcentralus", 2 * 29.496)]

    def test_flagged_instance_fails_with_its_flag(self):
        cat = catalog([instance(cloud="azure", name="Standard_ND96isr_H100_v5", gpus=12)],
                      [price(cloud="azure", name="Standard_ND96isr_H100_v5", region="eastus", zone="", od=98.32,
                             spot=None)])
        ranking = rank(Requirement(gpus=("H100",)), cat)
        assert ranking.offers == ()
        assert any("12 x H100" in r for r in ranking.rejected[0].reasons)

    @pytest.mark.parametrize("name, on_demand", [("a3-highgpu-8g", 88.49), ("a2-ultragpu-8g", 40.5504)])
    def test_gcp_us_central1_is_priced_from_the_dated_billing_snapshot(self, name, on_demand):
        """SkyPilot priced these from mis-matched (DWS / flex-start) GPU SKUs at about half; the dated snapshot
        prices the whole machine, its bundled Local SSD included."""
        [offer] = [o for o in rank(Requirement(gpus=(CAT.instance("gcp", name).gpu,), gpus_per_node=8,
                                               market="on-demand", clouds=("gcp",), regions=("us-central1",)),
                                   CAT).offers if o.candidate.instance.name == name][:1]
        source = CAT.source_of_key("gcp", offer.candidate.source_for(("on_demand",)))
        assert offer.candidate.prices.on_demand == pytest.approx(on_demand, abs=0.01)
        assert source.key == "cyclenerd" and source.snapshot_date == date(2026, 7, 30)

    def test_no_shipped_gcp_on_demand_price_is_a_regional_outlier(self):
        """Without the GCP file's own exclusions, no region's on-demand price is out of line with the others."""
        from gpufleet.catalog.loader import Catalog
        bare = Catalog(CAT.gpus.values(), [*CAT.instances.values(), *CAT.flagged_instances.values()],
                       CAT.raw_prices, [*CAT.price_sources.values()])
        assert [(f.instance_type, f.region) for f in bare.flags if f.cloud == "gcp"
                and f.kind == "on-demand-outlier"] == []

    def test_azure_h100_size_has_eight_gpus_not_the_sources_twelve(self):
        assert CAT.instance("azure", "Standard_ND96isr_H100_v5").gpus == 8


class TestReservationOnlyTypes:
    """GCP A4X, A4 and A3 Ultra are not sold on demand (catalog `on_demand: reservation`)."""

    def test_on_demand_leaves_them_out_with_the_reason_and_a_reservation_lets_them_in(self):
        req = Requirement(gpus=("H200",), gpus_per_node=8, clouds=("gcp",), market="on-demand")
        ranking = rank(req, CAT)
        assert not ranking.offers
        [reason] = {r for o in ranking.rejected if o.candidate.instance.name == "a3-ultragpu-8g"
                    for r in o.reasons if "not sold on demand" in r}
        assert reason.startswith("a3-ultragpu-8g is not sold on demand: gcp offers its standard capacity only "
                                 "through a reservation")
        reserved = rank(Requirement(gpus=("H200",), gpus_per_node=8, clouds=("gcp",), market="on-demand",
                                    reservation=True), CAT)
        assert {o.candidate.instance.name for o in reserved.offers} == {"a3-ultragpu-8g"}

    def test_a4_is_offered_on_spot_at_its_gpu_slice_price_wherever_its_gpu_row_lists_it(self):
        offers = rank(Requirement(gpus=("B200",), gpus_per_node=8, clouds=("gcp",), market="spot"), CAT).offers
        regions = {o.candidate.region for o in offers}
        assert {"us-central1", "us-east4", "europe-west4", "asia-northeast1"} <= regions and len(regions) == 10
        central = next(o for o in offers if o.candidate.zone == "us-central1-b")
        assert central.usd_per_hour == pytest.approx(32.6064)
        assert central.candidate.prices.on_demand is None  # a DWS SKU in the source, excluded
        assert central.as_dict(Requirement(market="spot"), CAT)["prices_from"] == "undated, not before 2025-11-27"
