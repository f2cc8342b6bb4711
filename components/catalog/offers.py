"""Offers: every place a cluster of a given shape can run, what it costs there, and why other places cannot.

A candidate is one instance type at one location: a zone where the catalog prices the type per zone (AWS, GCP),
or a region where it prices per region (Azure, and AWS regions known only from region-wide prices). A
multi-node RDMA cluster runs all its nodes in one such location, so its price is that location's price, never
the cheapest zone anywhere. Each candidate either meets a `Requirement` (an offer) or fails it with reasons.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from .cost import HOURS_PER_MONTH, NodePrices, hourly_cost
from .deployable import refusal, refusal_reason
from .loader import Catalog
from .models import InstanceType, Price
from .zones import is_edge, location_rank, restricted_reason, zone_kind

# `--fabric` values, in the spec's words: auto (the type's own fabric, if it has one), rdma (EFA, InfiniBand or RoCE: GCP's TCPX and
# TCPXO are GPUDirect over TCP, not RDMA), tcp, or one cloud fabric family.
FABRICS = {"auto": None, "tcp": None, "rdma": ("efa", "infiniband", "roce"), "efa": ("efa",),
           "infiniband": ("infiniband",), "gpudirect": ("tcpx", "tcpxo", "roce")}
DEFAULT_REFERENCE_GPU = "A100"
FRACTION_TOLERANCE = 0.005  # 1/6 is written 0.16667 in the data and may be asked as 0.1667


@dataclass(frozen=True)
class Requirement:
    """What the user asks for. Empty tuples mean "any"."""

    gpus: tuple[str, ...] = ()  # canonical GPU models
    gpus_per_node: int | None = None
    nodes: int = 1
    market: str = "on-demand"
    on_demand_base: int = 0  # with market "mixed"
    fabric: str = "auto"
    clouds: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    zone: str | None = None  # a spec's zone: only that zone (or region-wide prices); a restricted one is allowed
    include_restricted: bool = False  # Local/Wavelength Zones, GovCloud, China (`--include-restricted`)
    reservation: bool = False  # on-demand nodes run in a named capacity reservation (a stack's `market`)
    min_gpu_memory_gib: float | None = None
    max_usd_per_hour: float | None = None
    job_gpu_hours: float | None = None  # the job's size in GPU-hours on `reference_gpu`
    reference_gpu: str = DEFAULT_REFERENCE_GPU
    speed_factors: tuple[tuple[str, float], ...] = ()  # measured speed relative to `reference_gpu`, per GPU
    workload: str | None = None  # `--objective job --workload`: the MLPerf workload the speeds come from
    measured_speed_only: bool = False  # a GPU without a measured factor has no speed (no TFLOPS estimate)
    # an MLPerf Training workload: (GPU, GPUs, hours to train) of each published run; a job is priced only on offers
    # giving exactly that many GPUs of that type (time to train does not scale linearly with GPUs)
    training_runs: tuple[tuple[str, int, float], ...] = ()
    # vGPU slices: None = whole GPUs only (a slice is never offered unless asked for); 0 < x < 1 = slices of that
    # share of one GPU (`--gpu-fraction 0.25`, `accelerator.gpu_fraction`); `any_fraction` = both (the catalog listing).
    gpu_fraction: float | None = None
    any_fraction: bool = False

    def fraction_fits(self, instance: InstanceType) -> bool:
        """Whether the type's GPU share is the one asked for (whole GPUs unless a fraction is asked)."""
        if self.any_fraction:
            return True
        return abs(instance.gpu_fraction - (self.gpu_fraction or 1.0)) < FRACTION_TOLERANCE

    def rdma_cluster(self, instance: InstanceType) -> bool:
        """Nodes that will talk RDMA: several nodes, and a fabric asked for or (with "auto") the type's own."""
        return self.nodes > 1 and self.fabric != "tcp" and instance.fabric is not None

    def price_fields(self) -> tuple[str, ...]:
        """The `NodePrices` fields this requirement's market pays."""
        if self.market == "mixed":
            return (("on_demand",) if self.on_demand_base else ()) + (("spot",) if self.nodes > self.on_demand_base
                                                                        else ())
        return (self.market.replace("-", "_"),)


@dataclass(frozen=True)
class Candidate:
    """One instance type at one location, with its node prices there (flagged prices already removed)."""

    instance: InstanceType
    region: str
    zone: str
    prices: NodePrices
    source: str  # key of the oldest price source used here
    flag_reasons: tuple[str, ...]  # why the catalog refused this type or a price here
    market_sources: tuple[tuple[str, str], ...] = ()  # (price field, source key of the row that gave it)
    restricted: str | None = None  # why the location needs an opt-in (zones.restricted_reason), worked out once
    kind_rank: int = 0  # zones.location_rank, worked out once: ranking must stay within 10 ms

    def source_for(self, fields: tuple[str, ...]) -> str:
        """The source key of the prices a market pays here (the first field's; `source` when none is priced)."""
        given = dict(self.market_sources)
        return next((given[f] for f in fields if f in given), self.source)


@dataclass(frozen=True)
class Offer:
    """A candidate priced for a requirement. `reasons` is empty for a feasible offer."""

    candidate: Candidate
    usd_per_hour: float | None
    relative_speed: float | None
    job_usd: float | None
    job_hours: float | None
    reasons: tuple[str, ...] = field(default=())
    price_missing: bool = False  # one of `reasons` is that the market has no price here
    refused_plan: str = ""  # why a plan of this type is refused (deployable.refusal), "" when it runs
    asked_for: bool = True  # the type has the GPU, count, cloud and region asked for

    @property
    def feasible(self) -> bool:
        return not self.reasons

    @property
    def only_unpriced(self) -> bool:
        """Meets every requirement except that the catalog has no price for the market here."""
        return self.price_missing and len(self.reasons) == 1

    @property
    def listed_in_catalog(self) -> bool:
        """Meets every requirement, except perhaps that gpufleet refuses plans of the type, that the type is sold
        on demand only through a reservation, or that the market has no price here: `gpufleet catalog` lists it,
        saying which (its four market columns show what is sold)."""
        listed_anyway = {refusal_reason(self.refused_plan), not_sold_on_demand(self.candidate.instance)}
        others = [reason for reason in self.reasons if reason not in listed_anyway]
        return len(others) == int(self.price_missing)

    def as_dict(self, requirement: Requirement, catalog: Catalog) -> dict:
        c, i = self.candidate, self.candidate.instance
        total_gpus = i.gpus * requirement.nodes
        whole_gpus = total_gpus * i.gpu_fraction  # a vGPU slice counts as its share of one GPU
        gpu = catalog.gpus.get(i.gpu)
        pflops = (gpu.bf16_dense_tflops * whole_gpus / 1000) if gpu and gpu.bf16_dense_tflops else None
        # Only a price has a source: an unpriced offer names none rather than the file's default.
        source = catalog.source_of_key(i.cloud, c.source_for(requirement.price_fields())) if c.market_sources else None
        return {
            "cloud": i.cloud, "instance_type": i.name, "region": c.region, "zone": c.zone,
            "zone_kind": zone_kind(i.cloud, c.zone), "gpu": i.gpu, "gpus_per_node": i.gpus,
            "gpu_fraction": i.gpu_fraction,
            "gpu_memory_gib": i.gpu_memory_gib, "nodes": requirement.nodes, "gpus_total": total_gpus,
            "fabric": i.fabric or "tcp", "network_gbps": i.network_gbps, "fabric_gbps": fabric_gbps(i),
            "market": requirement.market,
            "node_usd_per_hour": {"on_demand": c.prices.on_demand, "spot": c.prices.spot,
                                  "reserved_1y": c.prices.reserved_1y, "reserved_3y": c.prices.reserved_3y},
            "usd_per_hour": _round(self.usd_per_hour, 4),
            "usd_per_month": _round(None if self.usd_per_hour is None else self.usd_per_hour * HOURS_PER_MONTH, 2),
            "usd_per_gpu_hour": _round(None if self.usd_per_hour is None else self.usd_per_hour / whole_gpus, 4),
            "usd_per_dense_pflop_hour": _round(self.usd_per_hour / pflops if self.usd_per_hour and pflops else None, 4),
            "relative_speed": _round(self.relative_speed, 3), "job_usd": _round(self.job_usd, 2),
            "job_hours": _round(self.job_hours, 2),
            "price_source": source.source if source else "",
            "snapshot_date": source.snapshot_date.isoformat() if source and source.snapshot_date else None,
            "snapshot_not_before": source.not_before.isoformat() if source and source.not_before else None,
            "prices_from": source.date_label if source else "", "reasons": list(self.reasons),
            "plan_refused": self.refused_plan or None,
            **({"mlperf": mlperf_row(requirement.workload, i.gpu, whole_gpus)} if requirement.workload else {}),
        }


class Ranking:
    """Feasible offers, best first; the infeasible ones (with every reason) are worked out only when asked."""

    def __init__(self, requirement: Requirement, catalog: Catalog, offers: list[Offer], misses: list[Candidate]):
        self.requirement, self.catalog = requirement, catalog
        self.offers = tuple(offers)
        self._misses = misses
        self._rejected: tuple[Offer, ...] | None = None

    @property
    def rejected(self) -> tuple[Offer, ...]:
        """Infeasible offers, nearest first: the GPU, count, cloud and region asked for, then fewest reasons, then
        "only the price is missing", then cost."""
        if self._rejected is None:
            offers = [evaluate(self.requirement, c, self.catalog) for c in self._misses]
            self._rejected = tuple(sorted(offers, key=lambda o: (not o.asked_for, len(o.reasons), not o.price_missing,
                                                                 _none_last(o.usd_per_hour), _name_key(o))))
        return self._rejected

    def nearest(self, count: int = 5) -> tuple[Offer, ...]:
        """The closest misses, one per (cloud, instance type), so each shows a different reason."""
        seen, result = set(), []
        for offer in self.rejected:
            key = (offer.candidate.instance.cloud, offer.candidate.instance.name)
            if key not in seen:
                seen.add(key)
                result.append(offer)
        return tuple(result[:count])

    def clouds_without_offer(self, clouds=("aws", "azure", "gcp")) -> dict[str, Offer]:
        """For each cloud with no feasible offer, its nearest miss (when it has any candidate at all)."""
        offered = {o.candidate.instance.cloud for o in self.offers}
        misses: dict[str, Offer] = {}
        for offer in self.rejected:
            misses.setdefault(offer.candidate.instance.cloud, offer)
        return {c: misses[c] for c in clouds if c not in offered and c in misses}


def rank(requirement: Requirement, catalog: Catalog) -> Ranking:
    """Feasible offers sorted by job cost (when a job size is given) or $/hour, then by name."""
    offers, misses = [], []
    for candidate in candidates(catalog):
        i = candidate.instance
        if not requirement.fraction_fits(i):
            if requirement.gpu_fraction is not None:  # a whole-GPU query never lists slices, not even as misses
                misses.append(candidate)
            continue
        if not asked_for(requirement, candidate):
            misses.append(candidate)  # the cheapest misses, decided before any pricing
            continue
        hourly = hourly_cost(requirement.market, requirement.nodes, candidate.prices, requirement.on_demand_base)
        if next(_reasons(requirement, candidate, hourly, _refusal(candidate, catalog)), None) is None:
            offers.append(evaluate(requirement, candidate, catalog))
        else:
            misses.append(candidate)
    offers.sort(key=lambda o: sort_key(requirement, o))
    return Ranking(requirement, catalog, offers, misses)


def sort_key(requirement: Requirement, offer: Offer) -> tuple:
    """Cost first; ties break by location kind (regular zones and regions before edge zones), region, then name."""
    primary = offer.job_usd if requirement.job_gpu_hours is not None else offer.usd_per_hour
    c = offer.candidate
    return (_none_last(primary), _none_last(offer.usd_per_hour), c.kind_rank, c.region, c.instance.cloud,
            c.instance.name, c.zone)


def best_per_region(offers) -> list[Offer]:
    """The first (best) offer of each (cloud, type, region): one row per region for tables."""
    seen, best = set(), []
    for offer in offers:
        key = (offer.candidate.instance.cloud, offer.candidate.instance.name, offer.candidate.region)
        if key not in seen:
            seen.add(key)
            best.append(offer)
    return best


def mlperf_row(workload: str, gpu: str, gpus: float) -> dict | None:
    """The published MLPerf row behind an offer's job figure on `gpus` GPUs: round, submission and result (None: no
    row; a training row only for exactly its number of GPUs)."""
    from ..bench.mlperf import load_workloads
    work = load_workloads()[workload]
    row = work.row_for(gpu, gpus)
    if row is None:
        return None
    figures = {"round": row.round, "submission": row.submission, "result": row.result,
               "accelerators": row.accelerators}
    if work.training:
        return {**figures, "submission_id": row.submission_id, "nodes": row.nodes, "minutes_to_train": row.result}
    return {**figures, "per_gpu": round(row.per_gpu, 2)}


def fabric_gbps(instance: InstanceType) -> float:
    """The fabric's bandwidth per node: InfiniBand links x their rate where the row gives it, else the NIC's."""
    if instance.fabric == "infiniband" and instance.infiniband_gbps:
        return float(instance.infiniband_gbps * max(instance.rdma_devices, 1))
    return instance.network_gbps


def relative_speed(gpu: str, requirement: Requirement, catalog: Catalog) -> float | None:
    """Speed against the reference GPU: a measured factor when given, else the dense TFLOPS ratio."""
    factors = dict(requirement.speed_factors)
    if gpu in factors:
        return factors[gpu]
    if gpu == requirement.reference_gpu:
        return 1.0
    if requirement.measured_speed_only:
        return None
    mine, ref = catalog.gpus.get(gpu), catalog.gpus.get(requirement.reference_gpu)
    if not mine or not ref or not mine.bf16_dense_tflops or not ref.bf16_dense_tflops:
        return None
    return mine.bf16_dense_tflops / ref.bf16_dense_tflops


def evaluate(requirement: Requirement, candidate: Candidate, catalog: Catalog) -> Offer:
    """Prices the candidate for the requirement and lists every requirement it misses."""
    hourly = hourly_cost(requirement.market, requirement.nodes, candidate.prices, requirement.on_demand_base)
    speed = relative_speed(candidate.instance.gpu, requirement, catalog)
    job_usd = job_hours = None
    whole_gpus = candidate.instance.gpus * candidate.instance.gpu_fraction * requirement.nodes
    if requirement.training_runs:
        job_hours = next((hours for gpu, gpus, hours in requirement.training_runs
                          if gpu == candidate.instance.gpu and gpus == whole_gpus), None)
        job_usd = None if job_hours is None or hourly is None else hourly * job_hours
        speed = speed if job_hours is not None else None
    elif requirement.job_gpu_hours is not None and speed and hourly is not None:
        job_hours = requirement.job_gpu_hours / speed / whole_gpus
        job_usd = hourly * job_hours
    refused = _refusal(candidate, catalog)
    reasons = tuple(_reasons(requirement, candidate, hourly, refused))
    return Offer(candidate=candidate, usd_per_hour=hourly, relative_speed=speed, job_usd=job_usd,
                 job_hours=job_hours, reasons=reasons, price_missing=hourly is None, refused_plan=refused,
                 asked_for=asked_for(requirement, candidate))


def asked_for(req: Requirement, c: Candidate) -> bool:
    """The candidate has the GPU, GPU count, cloud and region asked for (the filters, before any price)."""
    i = c.instance
    return not ((req.gpus and i.gpu not in req.gpus) or (req.gpus_per_node is not None and i.gpus != req.gpus_per_node)
                or (req.clouds and i.cloud not in req.clouds) or (req.regions and c.region not in req.regions))


def _refusal(candidate: Candidate, catalog: Catalog) -> str:
    """Why a plan of the candidate's type is refused, said of the type ("carries AMD GPUs ..."), or ""."""
    return refusal(candidate.instance, catalog.gpus.get(candidate.instance.gpu)) or ""


def _reasons(req: Requirement, c: Candidate, hourly: float | None, refused: str) -> Iterator[str]:
    """Every requirement the candidate misses, cheapest checks first (`rank` stops at the first)."""
    i = c.instance
    if req.gpus and i.gpu not in req.gpus:
        yield f"carries {i.gpu}, not {' or '.join(req.gpus)}"
    if req.gpus_per_node is not None and i.gpus != req.gpus_per_node:
        yield f"has {i.gpus} GPUs per node, not {req.gpus_per_node}"
    if not req.fraction_fits(i):
        if req.gpu_fraction is None:
            yield (f"is a vGPU slice ({i.fraction_label} of a {i.gpu}), left out of whole-GPU queries; ask for it with "
                   f"--gpu-fraction {i.gpu_fraction:g} (spec: accelerator.gpu_fraction)")
        else:
            share = f"a {i.fraction_label} slice of" if i.is_vgpu_slice else "a whole"
            yield f"carries {share} {i.gpu}, not a {req.gpu_fraction:g} slice"
    if refused:
        yield refusal_reason(refused)
    if reservation_missing(i, req.market, req.on_demand_base, req.reservation):
        yield not_sold_on_demand(i)
    if req.clouds and i.cloud not in req.clouds:
        yield f"cloud {i.cloud!r} is not among {', '.join(req.clouds)}"
    if req.regions and c.region not in req.regions:
        yield f"region {c.region!r} is not among {', '.join(req.regions)}"
    if req.zone is not None and c.zone not in ("", req.zone):
        yield f"zone {c.zone!r} is not {req.zone!r}"
    restricted = None if req.include_restricted else c.restricted
    if restricted and not (req.zone and req.zone == c.zone):
        yield f"{restricted}; pass --include-restricted to consider it"
    for r in c.flag_reasons:
        if r.startswith("[row]"):
            yield f"refused by the catalog's checks: {r[len('[row] '):]}"
    if req.min_gpu_memory_gib is not None and i.gpu_memory_gib < req.min_gpu_memory_gib:
        yield f"{i.gpu_memory_gib:g} GiB per GPU, under {req.min_gpu_memory_gib:g}"
    wanted = FABRICS[req.fabric]
    if wanted and i.fabric not in wanted:
        yield f"no {req.fabric.upper()} fabric (" + (f"has {i.fabric}" if i.fabric else
                                                      f"TCP only, {i.network_gbps:g} Gbps") + ")"
    if req.rdma_cluster(i) and is_edge(i.cloud, c.zone):
        yield f"{c.zone} is a {zone_kind(i.cloud, c.zone)} (edge location): no multi-node RDMA cluster there"
    if hourly is None and not c.region:
        yield "no public price in the catalog for any region"
    elif hourly is None:
        missing = _missing_prices(req, c)
        flagged = [r[len("[price] "):] for r in c.flag_reasons if r.startswith("[price]")]
        yield f"no {missing} price here" + (f" (flagged: {'; '.join(flagged)})" if flagged else "")
    elif req.max_usd_per_hour is not None and hourly > req.max_usd_per_hour:
        yield f"costs ${hourly:,.2f}/h, above the limit of ${req.max_usd_per_hour:,.2f}/h"


def reservation_missing(instance: InstanceType, market: str, on_demand_base: int, reservation: bool) -> bool:
    """On-demand nodes of a type the cloud sells only through reservations, and no reservation to run them in."""
    on_demand_nodes = market == "on-demand" or (market == "mixed" and on_demand_base > 0)
    return instance.on_demand_needs_reservation and on_demand_nodes and not reservation


def not_sold_on_demand(instance: InstanceType) -> str:
    """Why on-demand nodes of a reservation-only type could never start (`InstanceType.on_demand_needs_reservation`)."""
    return (f"{instance.name} is not sold on demand: {instance.cloud} offers its standard capacity only through a "
            "reservation (a future reservation, consumed by reservation-bound VMs), besides Spot and Flex-start")


def _missing_prices(req: Requirement, c: Candidate) -> str:
    needed = {"on-demand": ["on_demand"], "spot": ["spot"], "reserved-1y": ["reserved_1y"],
              "reserved-3y": ["reserved_3y"]}.get(req.market)
    if needed is None:  # mixed
        needed = (["on_demand"] if req.on_demand_base else []) + (["spot"] if req.nodes > req.on_demand_base else [])
    return " or ".join(n.replace("_", "-") for n in needed if getattr(c.prices, n) is None)


@lru_cache(maxsize=8)
def candidates(catalog: Catalog) -> tuple[Candidate, ...]:
    """Every (instance type, location) the catalog lists, flagged types included (they fail with the reason)."""
    instances = {**catalog.instances, **catalog.flagged_instances}
    return tuple(c for (cloud, name), instance in sorted(instances.items())
                 for c in _type_candidates(catalog, cloud, name, instance))


def _type_candidates(catalog: Catalog, cloud: str, name: str, instance: InstanceType) -> list[Candidate]:
    """One type's candidates: each priced location (region, zone), or one unpriced entry."""
    result = []
    raw, clean = _price_index(catalog)
    row_flags = tuple(f"[row] {f.reason}" for f in catalog.flags_of(cloud, name) if f.scope == "row"
                      and not f.region)
    if (cloud, name) not in raw:  # a type the catalog knows but no source prices: listed, never feasible
        result.append(Candidate(instance=instance, region="", zone="", prices=NodePrices(None, None), source="",
                                flag_reasons=row_flags))
    for region, rows in sorted(raw.get((cloud, name), {}).items()):
        usable = clean.get((cloud, name, region), [])
        zones = sorted({p.zone for p in rows if p.zone}) or [""]
        for zone in zones:
            flags = row_flags + tuple(f"[price] {f.reason}" for f in catalog.flags_of(cloud, name, region)
                                      if (f.region or f.scope != "row") and f.zone in ("", zone))
            prices, sources = location_prices(usable, zone)
            result.append(Candidate(instance=instance, region=region, zone=zone, prices=prices,
                                    source=_oldest_source(catalog, cloud, rows, zone),
                                    flag_reasons=flags, market_sources=sources,
                                    restricted=restricted_reason(cloud, region, zone),
                                    kind_rank=location_rank(cloud, region, zone)))
    return result


@lru_cache(maxsize=8)
def _price_index(catalog: Catalog) -> tuple[dict, dict]:
    """The raw prices by (cloud, type) then region, and the usable ones by (cloud, type, region), in file order."""
    clean: dict[tuple[str, str, str], list[Price]] = {}
    for p in catalog.prices:
        clean.setdefault((p.cloud, p.instance_type, p.region), []).append(p)
    raw: dict[tuple[str, str], dict[str, list[Price]]] = {}
    for p in catalog.raw_prices:
        raw.setdefault((p.cloud, p.instance_type), {}).setdefault(p.region, []).append(p)
    return raw, clean


def location_prices(rows: list[Price], zone: str) -> tuple[NodePrices, tuple[tuple[str, str], ...]]:
    """On-demand and reserved are regional (the highest the region's rows give); spot is the zone's own, or the
    region-wide row's. Also the source key of the row each price came from."""
    here = [p for p in rows if p.zone in ("", zone)]
    values, sources = {}, []
    for name, pool in (("on_demand", rows), ("spot", here), ("reserved_1y", rows), ("reserved_3y", rows)):
        priced = [p for p in pool if getattr(p, name) is not None]
        if name == "spot" and any(p.zone == zone for p in priced):
            priced = [p for p in priced if p.zone == zone]
        best = max(priced, key=lambda p: (getattr(p, name), p.source), default=None)
        values[name] = getattr(best, name) if best else None
        if best:
            sources.append((name, best.source))
    return NodePrices(**values), tuple(sources)


def location_candidates(catalog: Catalog, cloud: str, instance_type: str, region: str) -> list[Candidate]:
    """The engine's candidates for one type in one region (each zone, or the region as a whole), as `candidates`
    lists them. Built for that type alone: a plan needs one type, and building every type's (`candidates`) cost it
    about 20 ms of CPU."""
    return [c for c in _candidates_of_type(catalog, cloud, instance_type) if c.region == region]


@lru_cache(maxsize=64)
def _candidates_of_type(catalog: Catalog, cloud: str, instance_type: str) -> tuple[Candidate, ...]:
    key = (cloud, instance_type)
    instance = catalog.flagged_instances.get(key) or catalog.instances.get(key)  # as `candidates` merges them
    return () if instance is None else tuple(_type_candidates(catalog, cloud, instance_type, instance))


def _oldest_source(catalog: Catalog, cloud: str, rows: list[Price], zone: str) -> str:
    """Of the sources whose rows price this location (its zone's and the region's), the one with the oldest date."""
    keys = sorted({p.source for p in rows if p.zone in ("", zone)})
    dated = [(catalog.source_of_key(cloud, k).age_basis, k) for k in keys if catalog.source_of_key(cloud, k)]
    return min(dated)[1] if dated else keys[0]


def _max(values) -> float | None:
    return max((v for v in values if v is not None), default=None)


def _none_last(value: float | None) -> tuple:
    return (value is None, value or 0.0)


def _name_key(offer: Offer) -> tuple:
    c = offer.candidate
    return (c.instance.cloud, c.instance.name, c.region, c.zone)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
