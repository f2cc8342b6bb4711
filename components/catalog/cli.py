"""`gpufleet catalog`, `gpufleet catalog refresh` and `gpufleet select`.

    gpufleet catalog [--gpu H100] [--gpus-per-node 8] [--min-gpu-memory 80] [--fabric rdma] [--cloud aws]
                     [--region us-east-1] [--market spot] [--max-price 40] [--all-zones] [--flagged] [--json]
    gpufleet catalog refresh --cloud aws|azure|gcp [--from-file FILE ...] [--write] [--json]
    gpufleet select --gpu H100 --gpus-per-node 8 --nodes 2 --market spot [--fabric rdma] [--cloud ..]
                    [--region ..] [--job-gpu-hours N --reference-gpu A100] [--speed-factor H100=2.1]
                    [--objective job --workload bert-99|llama2_70b_lora [--job-samples 1e9]]
                    [--stack aws-train | --stack path/to/Pulumi.x.yaml] [--limit 15] [--all-zones] [--json]

`add_commands(subparsers)` registers them on the `gpufleet` parser. Each handler returns an exit code:
0 ok, 1 nothing feasible or a refresh that could not run, 2 bad input (one message, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path

from rich.console import Console

from ..spec.errors import SpecError
from .age import catalog_age_notes
from .cost import MARKETS
from .loader import CLOUDS, Catalog, load_catalog
from .offers import FABRICS, best_per_region, rank
from .render import catalog_rows, dumps, flag_dict, print_catalog, print_flags, print_selection, selection_document
from .requirement import FABRIC_ALIASES, requirement_from_args

OK, NOTHING_FEASIBLE, BAD_INPUT = 0, 1, 2


def add_commands(subparsers) -> None:
    """Registers `catalog` (with its `refresh` action) and `select` on the `gpufleet` subparsers."""
    catalog = subparsers.add_parser("catalog", help="list GPU instance offers and their prices, or refresh prices")
    _filters(catalog)
    catalog.add_argument("--market", choices=("on-demand", "spot", "reserved-1y", "reserved-3y"), default="on-demand",
                         help="the price that sorts the list and that --max-price limits (default: on-demand)")
    catalog.add_argument("--flagged", action="store_true", help="list the rows the sanity checks refused, and why")
    catalog.set_defaults(handler=run_catalog)
    actions = catalog.add_subparsers(dest="catalog_action")
    from .refresh.command import add_refresh_arguments, run_refresh
    refresh = actions.add_parser("refresh", help="rebuild a cloud's price file from its public pricing API")
    add_refresh_arguments(refresh)
    refresh.set_defaults(handler=run_refresh)

    select = subparsers.add_parser("select", help="rank the feasible offers for a cluster across clouds and zones")
    _filters(select)
    select.add_argument("--nodes", type=int, help="nodes in the cluster (default 1, or the stack's)")
    select.add_argument("--market", choices=MARKETS, help="how nodes are bought (default on-demand, or the stack's)")
    select.add_argument("--on-demand-base", type=int, help="with --market mixed: nodes bought on demand")
    select.add_argument("--job-gpu-hours", type=float, help="job size in GPU-hours on the reference GPU")
    select.add_argument("--reference-gpu", help="GPU the job size is measured on (default A100)")
    select.add_argument("--speed-factor", action="append", default=[], metavar="GPU=X",
                        help="measured speed of GPU relative to the reference GPU for this workload (repeatable)")
    select.add_argument("--objective", choices=("hour", "job"), default="hour",
                        help="rank by price per hour (default) or by what a named workload's job costs (job)")
    select.add_argument("--workload", help="with --objective job: an MLPerf workload with recorded results, e.g. "
                        "bert-99, resnet50 (MLPerf Inference) or llama2_70b_lora (MLPerf Training) (components/bench/data/mlperf.yaml)")
    select.add_argument("--job-samples", type=float, help="with --objective job and an inference workload: the job's "
                        "size in samples (default 1e9; a training job is one run)")
    select.add_argument("--stack", help="take the cluster shape from a stack: its name or a Pulumi.<stack>.yaml path")
    select.add_argument("--limit", type=int, default=15, help="rows to show (default 15; 0 = all)")
    select.set_defaults(handler=run_select)


def _filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpu", action="append", default=[], help="GPU model, e.g. H100 (repeatable or a,b)")
    parser.add_argument("--gpus-per-node", type=int, help="GPUs per node")
    parser.add_argument("--min-gpu-memory", type=float, help="minimum GiB per GPU")
    parser.add_argument("--gpu-fraction", help="vGPU slices of this share of one GPU, e.g. 0.25 or 1/4 (select: "
                        "whole GPUs only unless given; catalog: both unless given)")
    parser.add_argument("--fabric", choices=(*FABRICS, *FABRIC_ALIASES),
                        help="auto (default, as the spec's `fabric: auto`), rdma, tcp, efa, infiniband, gpudirect")
    parser.add_argument("--include-restricted", action="store_true",
                        help="also consider AWS Local/Wavelength Zones, GovCloud and China (need an opt-in or "
                        "a separate account)")
    parser.add_argument("--cloud", action="append", default=[], help=f"{', '.join(CLOUDS)} (repeatable or a,b)")
    parser.add_argument("--region", action="append", default=[], help="region (repeatable or a,b)")
    parser.add_argument("--max-price", type=float, help="highest USD per hour for the whole cluster")
    parser.add_argument("--all-zones", action="store_true", help="one row per zone instead of per region")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--data-dir", type=Path, help="catalog folder to read (default: the user data folder "
                        "$XDG_DATA_HOME/gpufleet when a refresh wrote one, else the shipped catalog)")


def run_select(args: argparse.Namespace, catalog: Catalog | None = None, today: date | None = None) -> int:
    catalog = catalog or load_catalog(getattr(args, "data_dir", None))
    try:
        req = requirement_from_args(args, catalog, select=True)
    except SpecError as err:
        return _bad_input(err)
    ranking = rank(req, catalog)
    listed = list(ranking.offers if args.all_zones else best_per_region(ranking.offers))
    offers = shown_offers(listed, args.limit)
    clouds = req.clouds or CLOUDS
    missing = ranking.clouds_without_offer(clouds) if ranking.offers else {}
    notes = catalog_age_notes(today, catalog=catalog)
    if args.json:
        print(dumps(selection_document(req, ranking, offers, catalog, notes, missing)))
    else:
        ranks = [listed.index(offer) + 1 for offer in offers]
        print_selection(_console(), req, ranking, offers, catalog, notes, missing, ranks)
    return OK if ranking.offers else NOTHING_FEASIBLE


def shown_offers(offers: list, limit: int) -> list:
    """The first `limit` offers (0 = all), plus each other cloud's best, so every cloud that can run it is compared."""
    if not limit:
        return offers
    shown = offers[:limit]
    clouds = {offer.candidate.instance.cloud for offer in shown}
    for offer in offers[limit:]:
        if offer.candidate.instance.cloud not in clouds:
            shown.append(offer)
            clouds.add(offer.candidate.instance.cloud)
    return shown


def run_catalog(args: argparse.Namespace, catalog: Catalog | None = None, today: date | None = None) -> int:
    catalog = catalog or load_catalog(getattr(args, "data_dir", None))
    if args.flagged:
        flags = [f for f in catalog.flags if not args.cloud or f.cloud in _split(args.cloud)]
        print(dumps([flag_dict(f) for f in flags])) if args.json else print_flags(_console(), flags)
        return OK
    try:
        req = requirement_from_args(args, catalog, select=False)
    except SpecError as err:
        return _bad_input(err)
    ranking = rank(req, catalog)
    # Types the catalog has a row for are listed even where the market has no price or gpufleet refuses plans of them
    # (AMD, arm64 GB200): users compare clouds and prices; each such row says which.
    listed = list(ranking.offers) + [o for o in ranking.rejected if o.listed_in_catalog and (
        not o.price_missing or req.max_usd_per_hour is None)]
    listed.sort(key=lambda o: (o.usd_per_hour is None, o.usd_per_hour or 0.0, o.candidate.instance.cloud,
                               o.candidate.instance.name, o.candidate.region, o.candidate.zone))
    rows = catalog_rows(listed if args.all_zones else best_per_region(listed), req, catalog)
    notes = catalog_age_notes(today, catalog=catalog)
    if args.json:
        print(dumps({"catalog": notes, "offers": rows, "flagged_rows": len(catalog.flags)}))
    else:
        print_catalog(_console(), rows, len(catalog.flags), notes)
    return OK


def _bad_input(err: SpecError) -> int:
    print(f"error: {err}", file=sys.stderr)
    return BAD_INPUT


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(v.strip() for item in values for v in item.split(",") if v.strip())


def _console() -> Console:
    return Console(soft_wrap=False, width=200, highlight=False)
