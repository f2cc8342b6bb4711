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
from gpufleet.catalog.loader import DATA_DIR, read_catalog
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

    def test_g4_is_cores_plus_ram_plus_its_rtx_sku_whose_name_says_neither_nvidia_nor_gpu(self):
        rates = gcp.parse_billing_skus([load("gcp_billing_skus.json")])
        instances = [i for (c, _), i in load_catalog().instances.items() if c == "gcp"]
        g4 = {r.instance_type: r for r in gcp.machine_prices(rates, instances) if r.region == "us-east4"}
        # 48 vCPU x 0.04891 + 180 GiB x 0.00587 + 1 x 1.09565: 4.49993, the shipped us-central1 price
        assert g4["g4-standard-48"].on_demand == pytest.approx(4.49993, abs=1e-5)
        assert g4["g4-standard-384"].on_demand == pytest.approx(8 * 4.49993, abs=1e-4)

    def test_a4_is_its_gpu_slice_sku_times_its_gpus_and_a_mislabelled_spot_sku_is_spot(self):
        rates = gcp.parse_billing_skus([load("gcp_billing_skus.json")])
        assert rates[("us-east4", "slice", "A4 B200", "on_demand")] == pytest.approx(16.11)  # not the DWS 11.277
        assert rates[("us-east4", "slice", "A4 B200", "spot")] == pytest.approx(4.9542)  # usageType said OnDemand
        instances = [i for (c, _), i in load_catalog().instances.items() if c == "gcp"]
        a4 = {r.region: r for r in gcp.machine_prices(rates, instances) if r.instance_type == "a4-highgpu-8g"}
        assert (a4["us-east4"].on_demand, a4["us-east4"].spot) == (pytest.approx(128.88), pytest.approx(39.6336))


class TestMerge:
    OLD = [Price("aws", "p5.48xlarge", "us-east-1", "use1-az2", 55.04, 19.2531, source="skypilot"),
           Price("aws", "p5.48xlarge", "us-east-1", "", 55.04, None, reserved_1y=None, source="vantage"),
           Price("aws", "p5.48xlarge", "us-east-1", "use1-az6", 55.04, 17.6289, source="skypilot")]

    def test_replaces_every_row_of_the_region_and_market_per_zone_included(self):
        new = [PriceRecord("p5.48xlarge", "us-east-1", "use1-az2", on_demand=50.0, spot=18.9),
               PriceRecord("p5.48xlarge", "us-east-1", "", on_demand=50.0, reserved_1y=33.0)]
        rows, report = merge(self.OLD, new, "aws", "aws-price-list")
        # use1-az6 priced only on-demand and spot, both refreshed for the region: its row is gone
        assert [(p.zone, p.source) for p in rows] == [("", "aws-price-list"), ("use1-az2", "aws-price-list")]
        changes = {(c["zone"], c["market"]): c for c in report["changes"]}
        assert changes[("use1-az2", "spot")]["old"] == 19.2531 and changes[("use1-az2", "spot")]["new"] == 18.9
        assert changes[("", "reserved_1y")]["old"] is None and report["added"] == 1
        assert changes[("", "on_demand")]["change_pct"] == round(100 * (50 - 55.04) / 55.04, 1)
        assert changes[("use1-az6", "spot")]["new"] is None and report["removed"] == 2

    def test_a_market_the_refresh_did_not_price_keeps_its_old_rows(self):
        rows, _ = merge(self.OLD, [PriceRecord("p5.48xlarge", "us-east-1", "use1-az2", on_demand=50.0)], "aws", "k")
        assert {(p.zone, p.on_demand, p.spot) for p in rows} == {
            ("use1-az2", 50.0, None), ("use1-az2", None, 19.2531), ("use1-az6", None, 17.6289)}

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
        key = "aws-price-list-2026-12-01"
        mine = [r for r in rows if r["source"] == key]
        assert {"instance_type": "p5.48xlarge", "region": "us-east-1", "zone": "use1-az2", "on_demand": "55.04",
                "spot": "18.9", "reserved_1y": "", "reserved_3y": "", "source": key} in mine
        assert f"{key}:" in (data_dir / "aws" / "prices.yaml").read_text()
        refreshed = read_catalog(data_dir)
        assert refreshed.source_of_key("aws", key).snapshot_date.isoformat() == "2026-12-01"

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


def refresh_p5(data_dir, fixture, *extra):
    return run(["catalog", "refresh", "--cloud", "aws", "--data-dir", str(data_dir), "--today", "2026-12-01",
                "--from-file", str(FIXTURES / fixture), "--write", "--json", *extra])


class TestRefreshFailures:
    """The recorded, API-shaped fixtures of each refresh failure (tests/fixtures/pricing/README.md)."""

    def test_a_price_cut_replaces_the_region_and_its_zones_and_select_ranks_it(self, data_dir, capsys):
        from gpufleet.catalog.offers import Requirement, rank
        assert refresh_p5(data_dir, "aws_offer_us-east-1_price-cut.json") == 0
        report = json.loads(capsys.readouterr().out)
        assert report["written"] and not report["outliers"]
        cat = read_catalog(data_dir)
        assert {p.on_demand for p in cat.prices_of("aws", "p5.48xlarge", "us-east-1") if p.on_demand} == {40.0}
        req = Requirement(gpus=("H100",), gpus_per_node=8, clouds=("aws",), regions=("us-east-1",))
        offers = [o for o in rank(req, cat).offers if o.candidate.instance.name == "p5.48xlarge"]
        assert offers and {o.usd_per_hour for o in offers} == {40.0}
        top = offers[0].as_dict(req, cat)
        assert top["price_source"].startswith("AWS Price List") and top["snapshot_date"] == "2026-12-01"

    def test_a_100x_typo_is_refused_unless_accepted(self, data_dir, capsys):
        before = (data_dir / "aws" / "prices.csv").read_text()
        assert refresh_p5(data_dir, "aws_offer_us-east-1_typo-100x.json") == 2
        err = capsys.readouterr().err
        assert "p5.48xlarge us-east-1 on-demand $5504/h is 100.00x the previous $55.04/h" in err
        assert (data_dir / "aws" / "prices.csv").read_text() == before
        assert refresh_p5(data_dir, "aws_offer_us-east-1_typo-100x.json", "--accept-outliers") == 0

    def test_the_outlier_factor_is_configurable(self, data_dir, capsys):
        assert refresh_p5(data_dir, "aws_offer_us-east-1_price-cut.json", "--outlier-factor", "1.2") == 2
        assert "0.73x the previous" in capsys.readouterr().err

    def test_a_negative_price_is_refused_naming_the_row(self, data_dir, capsys):
        before = (data_dir / "aws" / "prices.csv").read_text()
        assert refresh_p5(data_dir, "aws_offer_us-east-1_negative.json") == 2
        err = capsys.readouterr().err
        assert "p5.48xlarge us-east-1 (region-wide) on-demand: $-55.04/h is not a price" in err
        assert (data_dir / "aws" / "prices.csv").read_text() == before

    @pytest.mark.parametrize("make", [lambda p: p, lambda p: (p.mkdir(), p)[1]], ids=["missing", "empty"])
    def test_a_missing_or_empty_data_dir_starts_from_the_shipped_catalog(self, tmp_path, capsys, make):
        target = make(tmp_path / "mine")
        assert refresh_p5(target, "aws_offer_us-east-1_price-cut.json") == 0
        assert json.loads(capsys.readouterr().out)["started_from_shipped"]
        shipped, mine = read_catalog(DATA_DIR), read_catalog(target)
        assert (target / "gpus.yaml").is_file() and (target / "gcp" / "prices.csv").is_file()
        assert len(mine.instances) == len(shipped.instances)
        assert [p for p in mine.raw_prices if p.cloud == "azure"] == [p for p in shipped.raw_prices if p.cloud == "azure"]

    def test_the_shipped_catalog_is_never_written(self, capsys):
        before = (DATA_DIR / "aws" / "prices.csv").read_text()
        assert refresh_p5(DATA_DIR, "aws_offer_us-east-1_price-cut.json") == 2
        assert "read-only" in capsys.readouterr().err
        assert (DATA_DIR / "aws" / "prices.csv").read_text() == before

    def test_the_default_target_is_the_user_data_folder(self, tmp_path, monkeypatch, capsys):
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
        assert run(["catalog", "refresh", "--cloud", "aws", "--today", "2026-12-01", "--write",
                    "--from-file", str(FIXTURES / "aws_offer_us-east-1_price-cut.json")]) == 0
        assert (tmp_path / "gpufleet" / "aws" / "prices.csv").is_file()
        from gpufleet.catalog.datadir import USER, active_data_dir
        assert active_data_dir() == (tmp_path / "gpufleet", USER)
