"""`gpufleet catalog refresh --cloud aws|azure|gcp`: parse saved (or downloaded) pricing responses, fold them
into the cloud's price rows, report what changed, and with `--write` save prices.csv and the source's date.

Exit codes: 0 done, 1 the refresh could not run (no network, no credentials), 2 bad input (a bad flag, or a
response or saved file that is not in the shape its API documents).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

from ..loader import DATA_DIR, load_catalog
from . import aws, azure, fetch, gcp
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
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="catalog data folder to read and write")
    parser.add_argument("--write", action="store_true", help="write prices.csv and prices.yaml (default: report only)")
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
    catalog = load_catalog.__wrapped__(args.data_dir)
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
    rows, report = merge(old, records, args.cloud, SOURCE_KEYS[args.cloud])
    report = {"cloud": args.cloud, "source": SOURCE_KEYS[args.cloud], "snapshot_date": day.isoformat(),
              "written": bool(args.write), **report}
    if args.write:
        folder = args.data_dir / args.cloud
        (folder / "prices.csv").write_text(to_csv(rows))
        meta = folder / "prices.yaml"
        meta.write_text(set_source(meta.read_text(), SOURCE_KEYS[args.cloud], SOURCE_TEXT[args.cloud], day))
    _print_report(report, args.json)
    return 0


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
    print(f"{report['cloud']} prices from {report['source']} ({report['snapshot_date']}): {report['added']} added, "
          f"{report['changed']} changed, {report['removed']} removed; rows {report['rows_before']} -> "
          f"{report['rows_after']}{'' if report['written'] else ' (not written; pass --write)'}")
    for c in report["changes"]:
        where = " ".join(p for p in (c["instance_type"], c["region"], c["zone"]) if p)
        pct = f" ({c['change_pct']:+.1f}%)" if c["change_pct"] is not None else ""
        print(f"  {where} {c['market']}: {c['old'] if c['old'] is not None else '-'} -> "
              f"{c['new'] if c['new'] is not None else '-'}{pct}")
