"""Tables (rich) and JSON documents for `gpufleet catalog` and `gpufleet select`. JSON output is deterministic."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .cost import HOURS_PER_MONTH
from .loader import Catalog
from .models import Flag
from .offers import Offer, Ranking, Requirement

MARKET_LABELS = {"on_demand": "on-demand", "spot": "spot", "reserved_1y": "1y", "reserved_3y": "3y"}


def dumps(document) -> str:
    return json.dumps(document, indent=2, sort_keys=False, ensure_ascii=True)


def requirement_dict(req: Requirement) -> dict:
    values = asdict(req)
    values["speed_factors"] = dict(req.speed_factors)
    return values


def flag_dict(flag: Flag) -> dict:
    return {"cloud": flag.cloud, "instance_type": flag.instance_type, "region": flag.region, "zone": flag.zone,
            "excludes": flag.scope, "kind": flag.kind, "reason": flag.reason}


def selection_document(req: Requirement, ranking: Ranking, offers: list[Offer], catalog: Catalog,
                       age_notes: list[str], missing_clouds: dict[str, Offer]) -> dict:
    return {
        "requirement": requirement_dict(req),
        "catalog": age_notes,
        "offers": [o.as_dict(req, catalog) for o in offers],
        "feasible_offers": len(ranking.offers),
        "nearest": [] if ranking.offers else [o.as_dict(req, catalog) for o in ranking.nearest()],
        "clouds_without_offer": {c: o.as_dict(req, catalog) for c, o in missing_clouds.items()},
    }


def _print_workload(console: Console, req: Requirement) -> None:
    """Where each speed comes from: the workload's published MLPerf rows (round and submission)."""
    from ..bench.mlperf import SECONDS_PER_HOUR, load_workloads
    work = load_workloads()[req.workload or ""]
    if work.training:
        console.print(f"job: one training run of {work.name} (MLPerf Training, time to train); priced only on offers "
                      "giving exactly a published row's GPU count (use --nodes), others have no job figure:")
        for row in sorted(work.rows, key=lambda r: (r.gpu, r.accelerators)):
            console.print(escape(f"  {row.gpu} x {row.accelerators}: {row.result:,.2f} min ({row.nodes} node(s); "
                                 f"MLPerf {row.round}, {row.submission}, id {row.submission_id or 'not published here'})"))
        return
    ref = work.row(req.reference_gpu)
    samples = req.job_gpu_hours * SECONDS_PER_HOUR * ref.per_gpu if ref and req.job_gpu_hours else 0
    console.print(f"job: {samples:,.0f} samples of {work.name} (MLPerf {work.suite.capitalize()} {work.scenario}); "
                  "speed per GPU from published results, offers of other GPUs have no job figure:")
    for gpu in sorted({r.gpu for r in work.rows}):
        row = work.row(gpu)
        if row:
            console.print(escape(f"  {gpu}: {row.per_gpu:,.1f} {work.unit} per GPU ({row.result:,.2f} on "
                                 f"{row.accelerators}; MLPerf {row.round}, {row.submission})"))


def print_selection(console: Console, req: Requirement, ranking: Ranking, offers: list[Offer], catalog: Catalog,
                    age_notes: list[str], missing_clouds: dict[str, Offer], ranks: list[int] | None = None) -> None:
    """The offers as a table; `ranks` numbers each row by its place in the whole ranking (default 1, 2, ...)."""
    job = req.job_gpu_hours is not None
    count = f"a {req.gpu_fraction:g} vGPU slice of" if req.gpu_fraction else f"{req.gpus_per_node or 'any'} x"
    title = (f"{req.nodes} node(s) x {count} {'/'.join(req.gpus) or 'any GPU'}, "
             f"{req.market}, fabric {req.fabric}: {len(ranking.offers)} feasible offer(s)")
    table = Table(title=title, title_justify="left")
    columns = ["#", "cloud", "instance type", "GPUs", "region", "zone", "fabric", "$/hour", "$/month", "$/GPU-h",
               "$/PFLOP-h"] + (["speed", "job hours", "job $"] if job else []) + ["prices from"]
    for name in columns:
        table.add_column(name, justify="right" if name.startswith(("$", "#", "speed", "job")) else "left")
    for index, offer in zip(ranks or range(1, len(offers) + 1), offers, strict=False):
        d = offer.as_dict(req, catalog)
        row = [str(index), d["cloud"], d["instance_type"], gpus_cell(d), d["region"],
               _zone(d), f"{d['fabric']} {d['fabric_gbps']:g}G", _money(d["usd_per_hour"]),
               _money(d["usd_per_month"], 0), _money(d["usd_per_gpu_hour"]), _money(d["usd_per_dense_pflop_hour"])]
        if job:
            row += [_num(d["relative_speed"], "x"), _num(d["job_hours"]), _money(d["job_usd"], 0)]
        table.add_row(*(escape(cell) for cell in row), d["prices_from"])
    console.print(table)
    if job and req.workload:
        _print_workload(console, req)
    elif job:
        console.print(f"job: {req.job_gpu_hours:g} GPU-hours on {req.reference_gpu}; speed = dense BF16 TFLOPS "
                      f"ratio to {req.reference_gpu} unless --speed-factor gives a measured one")
    if not ranking.offers:
        console.print("no offer meets the requirement; the nearest ones and why each fails:")
        for offer in ranking.nearest():
            _print_miss(console, offer)
    for cloud, offer in missing_clouds.items():
        console.print(f"{cloud}: no feasible offer; nearest:")
        _print_miss(console, offer)
    console.print(f"$/month = {HOURS_PER_MONTH} h; $/PFLOP-h = $/hour per dense BF16 PFLOPS of all GPUs; "
                  "multi-node prices are one zone's (all nodes in that zone)")
    for note in age_notes:
        console.print(note, markup=False)


def catalog_rows(offers: Iterable[Offer], req: Requirement, catalog: Catalog) -> list[dict]:
    rows = []
    for offer in offers:
        d = offer.as_dict(req, catalog)
        i = offer.candidate.instance
        rows.append({key: d[key] for key in ("cloud", "instance_type", "gpu", "gpus_per_node", "gpu_fraction",
                                             "gpu_memory_gib")}
                    | {"vcpus": i.vcpus, "memory_gib": i.memory_gib, "fabric": d["fabric"],
                       "network_gbps": i.network_gbps, "network_burst": i.network_burst, "nvswitch": i.nvswitch,
                       "network_cards": i.network_cards, "efa_interfaces": i.efa_interfaces,
                       "region": d["region"], "zone": d["zone"], "zone_kind": d["zone_kind"]}
                    | d["node_usd_per_hour"] | {key: d[key] for key in ("price_source", "snapshot_date",
                                                          "snapshot_not_before", "prices_from")}
                    | {"market_prices_from": _market_dates(offer, catalog), "plan_refused": d["plan_refused"],
                       "on_demand_needs_reservation": i.on_demand_needs_reservation})
    return rows


def gpus_cell(row: dict) -> str:
    """"8x H100", or "1/8 L4 (vGPU)" for a slice of one GPU."""
    fraction = row.get("gpu_fraction", 1.0)
    if fraction < 1:
        return f"1/{round(1 / fraction)} {row['gpu']} (vGPU)"
    return f"{row['gpus_per_node']}x {row['gpu']}"


def _market_dates(offer: Offer, catalog: Catalog) -> dict[str, str]:
    """Each priced market's source date here: a catalog row can take on-demand from one source and spot from
    another, and the listing shows all four markets."""
    cloud = offer.candidate.instance.cloud
    found = ((field, catalog.source_of_key(cloud, key)) for field, key in offer.candidate.market_sources)
    return {field: source.date_label for field, source in found if source is not None}


def _prices_from_cell(row: dict) -> str:
    """One date when every market's price has it, else each date with its markets ("on-demand 2026-01-21; ...")."""
    by_date: dict[str, list[str]] = {}
    for field, label in row["market_prices_from"].items():
        by_date.setdefault(label, []).append(MARKET_LABELS[field])
    if len(by_date) <= 1:
        return next(iter(by_date), "")
    return "; ".join(f"{'/'.join(markets)} {label}" for label, markets in by_date.items())


def print_catalog(console: Console, rows: list[dict], flagged: int, age_notes: list[str]) -> None:
    table = Table(title=f"{len(rows)} offer(s), USD per node-hour", title_justify="left")
    for name in ("cloud", "instance type", "GPUs", "GiB/GPU", "vCPU", "RAM GiB", "fabric", "NVSwitch", "region",
                 "zone", "on-demand", "spot", "1y", "3y", "prices from", "plan"):
        table.add_column(name, justify="right" if name in ("GiB/GPU", "vCPU", "RAM GiB", "on-demand", "spot", "1y",
                                                            "3y") else "left")
    for r in rows:
        fabric = f"{r['fabric']} {'up to ' if r['network_burst'] else ''}{r['network_gbps']:g}G"
        cells = [r["cloud"], r["instance_type"], gpus_cell(r), f"{r['gpu_memory_gib']:g}",
                 str(r["vcpus"]), f"{r['memory_gib']:g}", fabric, "yes" if r["nvswitch"] else "no", r["region"],
                 _zone(r), *(_money(r[k]) for k in ("on_demand", "spot", "reserved_1y", "reserved_3y")),
                 _prices_from_cell(r), _plan_cell(r)]
        table.add_row(*(escape(cell) for cell in cells))
    console.print(table)
    console.print("- = no public price in the catalog (missing, not zero)")
    refused = {(r["cloud"], r["instance_type"]): r["plan_refused"] for r in rows if r["plan_refused"]}
    for (cloud, name), why in sorted(refused.items()):
        console.print(f"plan refused: {cloud} {name} {why}", markup=False, highlight=False)
    if flagged:
        console.print(f"{flagged} catalog row(s) flagged by the sanity checks and excluded; see `gpufleet catalog "
                      "--flagged`")
    for note in age_notes:
        console.print(note, markup=False)


def print_flags(console: Console, flags: list[Flag]) -> None:
    table = Table(title=f"{len(flags)} flagged row(s): excluded from selection", title_justify="left")
    for name in ("cloud", "instance type", "region", "zone", "excludes", "check", "reason"):
        table.add_column(name, overflow="fold")
    for f in flags:
        cells = (f.cloud, f.instance_type, f.region or "(all)", f.zone or "(all)", f.scope, f.kind, f.reason)
        table.add_row(*(escape(cell) for cell in cells))
    console.print(table)


def _print_miss(console: Console, offer: Offer) -> None:
    c = offer.candidate
    where = " ".join(p for p in (c.instance.cloud, c.instance.name, c.region, c.zone) if p)
    if offer.usd_per_hour is not None:
        where += f" (${offer.usd_per_hour:,.2f}/h)"
    console.print(f"  {where}: " + "; ".join(offer.reasons), markup=False, highlight=False)


def _plan_cell(row: dict) -> str:
    """Whether `gpufleet plan` takes the type: refused (the reason is printed below the table), on demand only in a
    reservation, or ok."""
    if row["plan_refused"]:
        return "refused"
    return "reservation" if row["on_demand_needs_reservation"] else "ok"


def _zone(d: dict) -> str:
    if not d["zone"]:
        return "(region)"
    return d["zone"] + (f" [{d['zone_kind']}]" if d["zone_kind"] not in ("zone", "region") else "")


def _money(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _num(value: float | None, suffix: str = "") -> str:
    return "-" if value is None else f"{value:,.2f}{suffix}"
