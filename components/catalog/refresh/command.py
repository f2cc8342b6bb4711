"""`gpufleet catalog refresh --cloud aws|azure|gcp`: parse saved (or downloaded) pricing responses, fold them
into the cloud's price rows, report what changed, and with `--write` save prices.csv and the source's date.

Exit codes: 0 done, 1 the refresh could not run (no network, no credentials), 2 bad input (a bad flag, a
response or saved file that is not in the shape its API documents, a price of zero or below, or a price that
moves more than `--outlier-factor` without `--accept-outliers`).

The shipped catalog is never written: a refresh writes the user data folder (`$XDG_DATA_HOME/gpufleet`) or
`--data-dir`. A folder without a catalog starts from the shipped one, and the full merged catalog is written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from datetime import date
from pathlib import Path

from ..datadir import SHIPPED_DIR, has_catalog, is_shipped, user_data_dir
from ..loader import read_catalog
from . import aws, azure, fetch, gcp
from .guard import DEFAULT_OUTLIER_FACTOR, not_positive, outliers
from .merge import combine_aws, merge, spread_to_zones, to_csv
from .records import RefreshError, ResponseShapeError
from .sources_yaml import set_source

SOURCE_KEYS = {"aws": "aws-price-list", "azure": "azure-retail-prices", "gcp": "gcp-billing-catalog"}
SOURCE_TEXT = {"aws": "AWS Price List (offer file / GetProducts) + ec2:DescribeSpotPriceHistory",
               "azure": "Azure Retail Prices API (prices.azure.com/api/retail/prices)",
               "gcp": "GCP Cloud Billing Catalog API (services/6F81-5844-456A/skus)"}


def add_refresh_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cloud", required=True, choices=tuple(SOURCE_KEYS))
    parser.add_argument("--from-file", action="append", default=[], type=Path, metavar="FILE",
                        help="a saved API response (repeatable): AWS offer file or GetProducts, Azure or GCP pages")
    parser.add_argument("--spot-file", type=Path, help="AWS: a saved DescribeSpotPriceHistory response")
    parser.add_argument("--zones-file", type=Path, help="AWS: a saved DescribeAvailabilityZones response")
    parser.add_argument("--region", action="append", default=[], help="regions to download (repeatable)")
    parser.add_argument("--api-key", help="GCP: Cloud Billing Catalog API key for downloading")
    parser.add_argument("--today", help="snapshot date to record, YYYY-MM-DD (default: today)")
    parser.add_argument("--data-dir", type=Path, help="catalog folder to read and write (default: the user data "
                        "folder, $XDG_DATA_HOME/gpufleet); one without a catalog starts from the shipped catalog")
    parser.add_argument("--write", action="store_true", help="write prices.csv and prices.yaml (default: report only)")
    parser.add_argument("--outlier-factor", type=float, default=DEFAULT_OUTLIER_FACTOR,
                        help="refuse a new price more than this factor from the old one or from the other regions' "
                        f"(default {DEFAULT_OUTLIER_FACTOR:g})")
    parser.add_argument("--accept-outliers", action="store_true", help="write prices beyond --outlier-factor anyway")
    parser.add_argument("--json", action="store_true", help="print the change report as JSON")


def run_refresh(args: argparse.Namespace) -> int:
    try:
        day = _day(args.today)
        docs = [_read_json(path, "--from-file") for path in args.from_file]
        spot = _read_json(args.spot_file, "--spot-file") if args.spot_file else None
        zones = _read_json(args.zones_file, "--zones-file") if args.zones_file else None
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if spot is not None and zones is None:
        print("error: `--spot-file` needs `--zones-file`: spot history names zones, the catalog stores AZ ids",
              file=sys.stderr)
        return 2
    target = args.data_dir or user_data_dir()
    if is_shipped(target):
        print(f"error: `--data-dir`: got {str(target)!r}; the shipped catalog is read-only. Expected another folder "
              f"(default: {user_data_dir()})", file=sys.stderr)
        return 2
    if args.outlier_factor <= 1:
        print(f"error: `--outlier-factor`: got {args.outlier_factor:g}; expected a factor above 1", file=sys.stderr)
        return 2
    starts_from_shipped = not has_catalog(target)
    catalog = read_catalog(SHIPPED_DIR if starts_from_shipped else target)
    instances = [i for (c, _), i in {**catalog.instances, **catalog.flagged_instances}.items() if c == args.cloud]
    old = [p for p in catalog.raw_prices if p.cloud == args.cloud]
    try:
        records = _records(args, docs, spot, zones, instances, old)
    except ResponseShapeError as err:
        print(f"error: the {args.cloud} pricing response is not in the shape its API documents: {err}; pass the "
              "API's own JSON, unmodified", file=sys.stderr)
        return 2
    except RefreshError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        print(f"error: the {args.cloud} pricing response is not in the shape its API documents "
              f"({err.__class__.__name__}: {err}); pass the API's own JSON, unmodified", file=sys.stderr)
        return 2
    refused = not_positive(records)
    if refused:
        print("error: the refresh has prices of zero or below; nothing was written:\n  " + "\n  ".join(refused),
              file=sys.stderr)
        return 2
    key = source_key(args.cloud, day)
    rows, report = merge(old, records, args.cloud, key)
    moved = outliers(old, rows, key, args.outlier_factor)
    report = {"cloud": args.cloud, "source": key, "snapshot_date": day.isoformat(), "data_dir": str(target),
              "started_from_shipped": starts_from_shipped, "outliers": moved,
              "written": bool(args.write) and (not moved or args.accept_outliers), **report}
    if moved and not args.accept_outliers:
        print(f"error: {len(moved)} refreshed price(s) move more than {args.outlier_factor:g}x; nothing was written. "
              "Check the source, or pass --accept-outliers:\n  " + "\n  ".join(moved), file=sys.stderr)
        _print_report(report, args.json)
        return 2
    if report["written"]:
        _write(Path(target), args.cloud, rows, key, day, starts_from_shipped)
    _print_report(report, args.json)
    return 0


def source_key(cloud: str, day: date) -> str:
    """The refresh's source key, dated, so rows from refreshes on different days keep their own dates."""
    return f"{SOURCE_KEYS[cloud]}-{day.isoformat()}"


def _write(target: Path, cloud: str, rows, key: str, day: date, starts_from_shipped: bool) -> None:
    """The full merged catalog: the shipped files first when the folder has no catalog, then this cloud's prices."""
    if starts_from_shipped:
        shutil.copytree(SHIPPED_DIR, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        for path in target.rglob("*"):  # an installed wheel's files may be read-only; the copies are the user's
            path.chmod(path.stat().st_mode | 0o200)
    folder = target / cloud
    (folder / "prices.csv").write_text(to_csv(rows))
    meta = folder / "prices.yaml"
    meta.write_text(set_source(meta.read_text(), key, SOURCE_TEXT[cloud], day))


def _records(args, docs, spot, zones, instances, old):
    names = {i.name for i in instances}
    if args.cloud == "aws":
        docs = docs or fetch.aws_offer_files(args.region)
        regional = [r for doc in docs for r in aws.parse_price_list(doc, names)]
        spot_rows = aws.parse_spot_history(spot, aws.parse_zone_ids(zones), names) if spot else []
        if not spot_rows:
            print(f"note: no spot prices refreshed; existing spot rows are kept. {fetch.AWS_SPOT_HINT}",
                  file=sys.stderr)
        return combine_aws(regional, spot_rows)
    if args.cloud == "azure":
        pages = docs or fetch.azure_pages(sorted(names), args.region)
        return spread_to_zones(azure.parse_retail_prices(pages, names), old)
    pages = docs or fetch.gcp_pages(args.api_key)
    return spread_to_zones(gcp.machine_prices(gcp.parse_billing_skus(pages), instances), old)


def _day(text):
    """`--today` as a date; a bad value names the flag, the value and the format accepted."""
    if not text:
        return date.today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"`--today`: got {text!r}; expected a date YYYY-MM-DD") from None


def _read_json(path: Path, flag: str):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"`{flag}`: got {str(path)!r}; expected an existing file") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"`{flag}`: got {str(path)!r}; expected a JSON API response ({err.msg})") from None


def _print_report(report: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report, indent=2))
        return
    shipped = " (started from the shipped catalog)" if report["started_from_shipped"] else ""
    print(f"{report['cloud']} prices from {report['source']} ({report['snapshot_date']}) into {report['data_dir']}"
          f"{shipped}: {report['added']} added, "
          f"{report['changed']} changed, {report['removed']} removed; rows {report['rows_before']} -> "
          f"{report['rows_after']}{'' if report['written'] else ' (not written; pass --write)'}")
    for c in report["changes"]:
        where = " ".join(p for p in (c["instance_type"], c["region"], c["zone"]) if p)
        pct = f" ({c['change_pct']:+.1f}%)" if c["change_pct"] is not None else ""
        print(f"  {where} {c['market']}: {c['old'] if c['old'] is not None else '-'} -> "
              f"{c['new'] if c['new'] is not None else '-'}{pct}")
