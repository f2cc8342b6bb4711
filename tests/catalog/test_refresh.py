"""Refresh parsers on API-shaped responses, the merge report, and the command's exit codes."""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import urllib.error
from pathlib import Path

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.cli import add_commands
from gpufleet.catalog.loader import DATA_DIR
from gpufleet.catalog.models import Price
from gpufleet.catalog.refresh import aws, azure, gcp
from gpufleet.catalog.refresh.merge import combine_aws, merge, spread_to_zones
from gpufleet.catalog.refresh.records import PriceRecord, RefreshError
from gpufleet.catalog.refresh.sources_yaml import set_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pricing"
AWS_TYPES = {"p5.48xlarge", "p4d.24xlarge", "g4dn.metal", "g6e.xlarge"}


def load(name):
    return json.loads((FIXTURES / name).read_text())


class TestAwsPriceList:
    def test_offer_file_keeps_linux_shared_used_and_standard_no_upfront(self):
        records = {r.instance_type: r for r in aws.parse_price_list(load("aws_offer_us-east-1.json"), AWS_TYPES)}
        assert set(records) == {"p5.48xlarge", "p4d.24xlarge", "g4dn.metal"}
        assert records["p5.48xlarge"] == PriceRecord("p5.48xlarge", "us-east-1", on_demand=55.04)
        assert records["p4d.24xlarge"] == PriceRecord("p4d.24xlarge", "us-east-1", on_demand=21.957642,
                                                      reserved_1y=13.921094, reserved_3y=9.85)
        assert records["g4dn.metal"].reserved_1y == 4.929

    def test_get_products_response(self):
        records = aws.parse_price_list(load("aws_getproducts_us-east-2.json"), AWS_TYPES)
        assert [(r.instance_type, r.region, r.on_demand, r.reserved_1y) for r in records] == [
            ("g6e.xlarge", "us-east-2", 1.861, 1.17243), ("p5.48xlarge", "us-east-2", 55.04, None)]

    def test_without_a_type_filter_everything_linux_is_kept(self):
        assert "m5.large" in {r.instance_type for r in aws.parse_price_list(load("aws_offer_us-east-1.json"))}

    def test_unknown_shape_is_refused(self):
        with pytest.raises(RefreshError, match="Price List"):
            aws.parse_price_list({"Items": []})


class TestAwsSpot:
    def test_latest_linux_price_per_az_id(self):
        zones = aws.parse_zone_ids(load("aws_availability_zones_us-east-1.json"))
        records = aws.parse_spot_history(load("aws_spot_history_us-east-1.json"), zones, AWS_TYPES)
        assert [(r.instance_type, r.zone, r.spot) for r in records] == [
            ("p4d.24xlarge", "use1-az4", 8.1203), ("p5.48xlarge", "use1-atl2-az1", 10.2397),
            ("p5.48xlarge", "use1-az2", 18.9)]

    def test_zone_missing_from_the_mapping_is_an_error(self):
        with pytest.raises(RefreshError, match="AZ ids"):
            aws.parse_spot_history(load("aws_spot_history_us-east-1.json"), {}, AWS_TYPES)

    def test_combine_puts_the_regions_on_demand_on_zone_rows(self):
        rows = combine_aws([PriceRecord("p5.48xlarge", "us-east-1", on_demand=55.04)],
                           [PriceRecord("p5.48xlarge", "us-east-1", "use1-az2", spot=18.9)])
        assert rows[1] == PriceRecord("p5.48xlarge", "us-east-1", "use1-az2", on_demand=55.04, spot=18.9)


class TestAzure:
    def test_consumption_spot_and_reservations_divided_by_term_hours(self):
        pages = [load("azure_retail_prices_page1.json"), load("azure_retail_prices_page2.json")]
        records = azure.parse_retail_prices(pages, {"Standard_ND96asr_v4"})
        assert records == [
            PriceRecord("Standard_ND96asr_v4", "eastus", on_demand=27.197, spot=2.99167,
                        reserved_1y=round(150000 / 8760, 6), reserved_3y=round(270000 / 26280, 6)),
            PriceRecord("Standard_ND96asr_v4", "southcentralus", on_demand=27.197, spot=3.2637)]


class TestGcp:
    def test_machine_price_is_cores_plus_ram_plus_gpus_and_skips_dws(self):
        rates = gcp.parse_billing_skus([load("gcp_billing_skus.json")])
        assert ("us-east4", "gpu", "H100 80GB", "on_demand") in rates
        assert rates[("us-east4", "gpu", "H100 80GB", "on_demand")] == pytest.approx(9.79655)  # not the DWS 4.20076
        instances = [i for (c, _), i in load_catalog().instances.items() if c == "gcp"]
        records = {(r.instance_type, r.region): r for r in gcp.machine_prices(rates, instances)}
        a3 = next(i for i in instances if i.name == "a3-highgpu-8g")
        r = records[("a3-highgpu-8g", "us-east4")]
        assert r.on_demand == pytest.approx(0.031611 * a3.vcpus + 0.002738 * a3.memory_gib + 9.79655 * 8, abs=1e-4)
        assert r.spot == pytest.approx(0.009654 * a3.vcpus + 0.000836 * a3.memory_gib + 2.2356 * 8, abs=1e-4)
        assert r.reserved_1y is not None and r.reserved_3y is None  # no 3-year GPU commitment SKU in the response
        mega = next(i for i in instances if i.name == "a3-megagpu-8g")
        assert records[("a3-megagpu-8g", "us-east4")].on_demand == pytest.approx(  # billed with the Mega GPU SKU
            0.031611 * mega.vcpus + 0.002738 * mega.memory_gib + 11.03385 * 8, abs=1e-4)
        assert records[("g2-standard-4", "us-east4")].on_demand is not None


class TestMerge:
    OLD = [Price("aws", "p5.48xlarge", "us-east-1", "use1-az2", 55.04, 19.2531, source="skypilot"),
           Price("aws", "p5.48xlarge", "us-east-1", "", 55.04, None, reserved_1y=None, source="vantage"),
           Price("aws", "p5.48xlarge", "us-east-1", "use1-az6", 55.04, 17.6289, source="skypilot")]

    def test_replaces_rows_it_fully_prices_and_keeps_the_rest(self):
        new = [PriceRecord("p5.48xlarge", "us-east-1", "use1-az2", on_demand=50.0, spot=18.9),
               PriceRecord("p5.48xlarge", "us-east-1", "", on_demand=50.0, reserved_1y=33.0)]
        rows, report = merge(self.OLD, new, "aws", "aws-price-list")
        assert [(p.zone, p.source) for p in rows] == [("", "aws-price-list"), ("use1-az2", "aws-price-list"),
                                                      ("use1-az6", "skypilot")]
        changes = {(c["zone"], c["market"]): c for c in report["changes"]}
        assert changes[("use1-az2", "spot")]["old"] == 19.2531 and changes[("use1-az2", "spot")]["new"] == 18.9
        assert changes[("", "reserved_1y")]["old"] is None and report["added"] == 1
        assert changes[("", "on_demand")]["change_pct"] == round(100 * (50 - 55.04) / 55.04, 1)
        assert report["removed"] == 0

    def test_a_partial_refresh_keeps_the_old_row(self):
        rows, _ = merge(self.OLD, [PriceRecord("p5.48xlarge", "us-east-1", "use1-az2", on_demand=50.0)], "aws", "k")
        assert sum(1 for p in rows if p.zone == "use1-az2") == 2

    def test_region_records_spread_to_known_zones(self):
        spread = spread_to_zones([PriceRecord("p5.48xlarge", "us-east-1", on_demand=1.0),
                                  PriceRecord("p5.48xlarge", "us-west-2", on_demand=2.0)], self.OLD)
        assert [(r.region, r.zone) for r in spread] == [("us-east-1", "use1-az2"), ("us-east-1", "use1-az6"),
                                                        ("us-west-2", "")]


def test_set_source_keeps_comments_and_replaces_the_entry():
    text = "# comment\nsource: x\nsources:\n  old:\n    source: \"o\"\n    snapshot_date: 2026-01-01\nnotes:\n  - n\n"
    once = set_source(text, "aws-price-list", "AWS", __import__("datetime").date(2026, 12, 1))
    twice = set_source(once, "aws-price-list", "AWS", __import__("datetime").date(2026, 12, 2))
    assert once.startswith("# comment") and "  old:" in twice and twice.count("aws-price-list") == 1
    assert "snapshot_date: 2026-12-02" in twice and "notes:\n  - n" in twice


def run(argv):
    parser = argparse.ArgumentParser(prog="gpufleet")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.fixture
def data_dir(tmp_path):
    target = tmp_path / "data"
    shutil.copytree(DATA_DIR, target)
    return target


class TestRefreshCommand:
    def test_aws_from_files_writes_prices_and_source(self, data_dir, capsys):
        code = run(["catalog", "refresh", "--cloud", "aws", "--data-dir", str(data_dir), "--today", "2026-12-01",
                    "--from-file", str(FIXTURES / "aws_offer_us-east-1.json"),
                    "--spot-file", str(FIXTURES / "aws_spot_history_us-east-1.json"),
                    "--zones-file", str(FIXTURES / "aws_availability_zones_us-east-1.json"), "--write", "--json"])
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        assert report["written"] and report["snapshot_date"] == "2026-12-01" and report["changed"] >= 1
        rows = list(csv.DictReader((data_dir / "aws" / "prices.csv").open()))
        mine = [r for r in rows if r["source"] == "aws-price-list"]
        assert {"instance_type": "p5.48xlarge", "region": "us-east-1", "zone": "use1-az2", "on_demand": "55.04",
                "spot": "18.9", "reserved_1y": "", "reserved_3y": "", "source": "aws-price-list"} in mine
        assert "aws-price-list:" in (data_dir / "aws" / "prices.yaml").read_text()
        refreshed = load_catalog.__wrapped__(data_dir)
        assert refreshed.source_of_key("aws", "aws-price-list").snapshot_date.isoformat() == "2026-12-01"

    def test_report_only_by_default(self, data_dir, capsys):
        before = (data_dir / "azure" / "prices.csv").read_text()
        code = run(["catalog", "refresh", "--cloud", "azure", "--data-dir", str(data_dir), "--today", "2026-12-01",
                    "--from-file", str(FIXTURES / "azure_retail_prices_page1.json"),
                    "--from-file", str(FIXTURES / "azure_retail_prices_page2.json")])
        assert code == 0 and (data_dir / "azure" / "prices.csv").read_text() == before
        out = capsys.readouterr().out
        assert "not written; pass --write" in out and "Standard_ND96asr_v4 eastus reserved_1y" in out

    def test_without_network_fails_with_a_message(self, data_dir, capsys, monkeypatch):
        def offline(*_a, **_k):
            raise urllib.error.URLError("Name or service not known")
        monkeypatch.setattr("urllib.request.urlopen", offline)
        assert run(["catalog", "refresh", "--cloud", "azure", "--data-dir", str(data_dir)]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: cannot reach prices.azure.com") and "--from-file" in err
        assert "Traceback" not in err

    def test_gcp_without_api_key_says_what_to_do(self, data_dir, capsys):
        assert run(["catalog", "refresh", "--cloud", "gcp", "--data-dir", str(data_dir)]) == 1
        assert "API key" in capsys.readouterr().err

    def test_a_response_of_the_wrong_shape_exits_2(self, data_dir, capsys, tmp_path):
        broken = tmp_path / "broken.json"
        broken.write_text(json.dumps({"Items": [{"serviceName": "Virtual Machines", "armSkuName": "Standard_ND96asr_v4",
                                                 "armRegionName": "eastus", "retailPrice": "not a number"}]}))
        assert run(["catalog", "refresh", "--cloud", "azure", "--data-dir", str(data_dir),
                    "--from-file", str(broken)]) == 2
        err = capsys.readouterr().err
        assert "not in the shape its API documents" in err and "Traceback" not in err

    @pytest.mark.parametrize("cloud, body", [("aws", {"unrelated": 1}), ("azure", [1, 2]), ("gcp", {"unrelated": 1})])
    def test_a_document_of_the_wrong_shape_exits_2_with_one_line(self, data_dir, capsys, tmp_path, cloud, body):
        broken = tmp_path / "broken.json"
        broken.write_text(json.dumps(body))
        assert run(["catalog", "refresh", "--cloud", cloud, "--data-dir", str(data_dir),
                    "--from-file", str(broken)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: the {cloud} pricing response is not in the shape its API documents")
        assert err.count("\n") == 1 and "Traceback" not in err

    @pytest.mark.parametrize("extra, message", [
        (["--from-file", "/nonexistent.json"], "expected an existing file"),
        (["--from-file", str(FIXTURES / "README.md")], "expected a JSON API response"),
        (["--spot-file", str(FIXTURES / "aws_spot_history_us-east-1.json")], "needs `--zones-file`"),
        (["--today", "yesterday"], "`--today`: got 'yesterday'; expected a date YYYY-MM-DD"),
        (["--today", "2026-13-01"], "`--today`: got '2026-13-01'; expected a date YYYY-MM-DD")])
    def test_bad_input_exits_2(self, data_dir, capsys, extra, message):
        assert run(["catalog", "refresh", "--cloud", "aws", "--data-dir", str(data_dir), *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
