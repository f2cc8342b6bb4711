"""`gpufleet select` and `gpufleet catalog`: JSON documents, tables, stack files and exit codes."""

from __future__ import annotations

import argparse
import json
from datetime import date

import pytest

from gpufleet.catalog.cli import add_commands, run_catalog, run_select

TODAY = date(2026, 12, 2)


def parse(argv):
    parser = argparse.ArgumentParser(prog="gpufleet")
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def select(argv, capsys):
    code = run_select(parse(["select", *argv]), today=TODAY)
    out = capsys.readouterr()
    return code, out.out, out.err


H100_SPOT = ["--gpu", "H100", "--gpus-per-node", "8", "--nodes", "2", "--market", "spot"]


class TestSelect:
    def test_json_is_deterministic_and_has_every_figure(self, capsys):
        code, first, _ = select([*H100_SPOT, "--json"], capsys)
        _, second, _ = select([*H100_SPOT, "--json"], capsys)
        assert code == 0 and first == second
        doc = json.loads(first)
        offer = doc["offers"][0]
        for key in ("usd_per_hour", "usd_per_month", "usd_per_gpu_hour", "usd_per_dense_pflop_hour", "zone",
                    "price_source", "prices_from"):
            assert offer[key] is not None, key
        assert offer["snapshot_date"] or offer["prices_from"].startswith("undated")
        assert offer["usd_per_month"] == pytest.approx(offer["usd_per_hour"] * 730, abs=730 * 0.00005 + 0.005)
        assert offer["usd_per_gpu_hour"] == pytest.approx(offer["usd_per_hour"] / 16, abs=1e-3)
        assert offer["usd_per_dense_pflop_hour"] == pytest.approx(offer["usd_per_hour"] / (16 * 989.4 / 1000), abs=1e-3)
        assert {o["cloud"] for o in doc["offers"]} == {"aws", "azure", "gcp"}
        assert doc["clouds_without_offer"] == {}
        assert any("days old" in line for line in doc["catalog"])

    def test_table_lists_clouds_and_the_catalog_age(self, capsys):
        code, out, _ = select([*H100_SPOT, "--limit", "5"], capsys)
        assert code == 0 and "p5.48xlarge" in out and "a3-" in out and "Standard_ND96isr_H100_v5" in out
        assert "catalog prices for aws from" in out and "warning:" in out

    def test_job_cost_columns(self, capsys):
        code, out, _ = select(["--gpu", "H100,A100", "--gpus-per-node", "8", "--job-gpu-hours", "1000",
                               "--speed-factor", "H100=2.5", "--json"], capsys)
        doc = json.loads(out)
        speeds = {o["gpu"]: o["relative_speed"] for o in doc["offers"]}
        assert speeds == {"H100": 2.5, "A100": 1.0}
        jobs = [o["job_usd"] for o in doc["offers"]]
        assert code == 0 and jobs == sorted(jobs)

    def test_infeasible_exits_1_with_nearest_offers(self, capsys):
        code, out, _ = select(["--gpu", "H100", "--gpus-per-node", "12", "--nodes", "2", "--json"], capsys)
        doc = json.loads(out)
        assert code == 1 and doc["offers"] == [] and len(doc["nearest"]) == 5
        assert all(o["reasons"] for o in doc["nearest"])

    def test_stack_file_gives_the_shape(self, capsys):
        code, out, _ = select(["--stack", "aws-train", "--json", "--limit", "0"], capsys)
        req = json.loads(out)["requirement"]
        assert code == 0 and (req["gpus"], req["gpus_per_node"], req["nodes"], req["market"], req["fabric"]) == (
            ["H100"], 8, 2, "spot", "efa")
        assert all(o["fabric"] == "efa" for o in json.loads(out)["offers"])

    @pytest.mark.parametrize("argv, path", [
        (["--gpu", "H900"], "`--gpu`: got 'H900'; did you mean"),
        (["--gpu", "H100", "--nodes", "0"], "`--nodes`: got 0"),
        (["--market", "spot", "--on-demand-base", "1"], "only applies with `--market mixed`"),
        (["--speed-factor", "H100"], "`--speed-factor`: got 'H100'"),
        (["--cloud", "oracle"], "`--cloud`: got 'oracle'"),
        (["--stack", "nope"], "`--stack`: got 'nope'"),
        (["--job-gpu-hours", "-5"], "`--job-gpu-hours`")])
    def test_bad_input_exits_2_with_one_message(self, capsys, argv, path):
        code, out, err = select(argv, capsys)
        assert code == 2 and out == "" and path in err and "Traceback" not in err
        assert err.startswith("error: invalid `gpufleet select`")


class TestCatalog:
    def run(self, argv, capsys):
        code = run_catalog(parse(["catalog", *argv]), today=TODAY)
        return code, capsys.readouterr().out

    def test_lists_offers_with_every_market_and_the_source(self, capsys):
        code, out = self.run(["--gpu", "A100", "--gpus-per-node", "8", "--cloud", "aws", "--json"], capsys)
        rows = json.loads(out)["offers"]
        assert code == 0 and {r["instance_type"] for r in rows} == {"p4d.24xlarge"}
        east = next(r for r in rows if r["region"] == "us-east-1")
        assert (east["on_demand"], east["reserved_1y"], east["reserved_3y"]) == (21.957642, 13.921094, None)
        assert east["snapshot_date"] and east["network_cards"] == 4 and east["efa_interfaces"] == 4

    def test_each_market_names_the_date_of_its_own_source(self, capsys):
        code, out = self.run(["--gpu", "H200", "--cloud", "aws", "--json"], capsys)
        east = next(r for r in json.loads(out)["offers"] if r["instance_type"] == "p5en.48xlarge"
                    and r["region"] == "us-east-1")
        assert code == 0 and east["market_prices_from"] == {"on_demand": "2026-01-21",
                                                            "spot": "undated, not before 2025-06-05"}
        code, table = self.run(["--gpu", "H200", "--cloud", "aws"], capsys)
        assert "on-demand 2026-01-21; spot undated" in table

    def test_unpriced_types_are_listed_without_a_price(self, capsys):
        _, out = self.run(["--gpu", "H200", "--cloud", "aws", "--json", "--all-zones"], capsys)
        p5e = [r for r in json.loads(out)["offers"] if r["instance_type"] == "p5e.48xlarge"]
        assert p5e and all(r["on_demand"] is None for r in p5e)

    def test_max_price_filters_on_the_market(self, capsys):
        _, out = self.run(["--market", "spot", "--max-price", "1.0", "--json"], capsys)
        rows = json.loads(out)["offers"]
        assert rows and all(r["spot"] is not None and r["spot"] <= 1.0 for r in rows)

    def test_flagged_rows_show_their_reason(self, capsys):
        code, out = self.run(["--flagged", "--json"], capsys)
        flags = json.loads(out)
        assert code == 0 and all(f["reason"] and f["kind"] for f in flags)
        assert {"spot-equals-on-demand", "excluded"} <= {f["kind"] for f in flags}

    def test_table(self, capsys):
        code, out = self.run(["--gpu", "L40S", "--cloud", "aws"], capsys)
        assert code == 0 and "g6e.48xlarge" in out and "flagged by the sanity checks" in out

    def test_flagged_table(self, capsys):
        code, out = self.run(["--flagged", "--cloud", "gcp"], capsys)
        assert code == 0 and "a4-highgpu-8g" in out and "us-east4" in out and "Dynamic Workload Scheduler" in out


def test_fabric_takes_the_specs_word_and_the_old_one(capsys):
    from gpufleet.plan.cli import main
    outputs = []
    for word in ("auto", "any"):
        assert main(["select", "--gpu", "H100", "--gpus-per-node", "8", "--fabric", word, "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out)["offers"])
    assert outputs[0] == outputs[1] and outputs[0]
