"""`gpufleet select --objective job --workload NAME`: offers ranked by what a job of a published MLPerf workload
costs on them (components/bench/data/mlperf.yaml, each row with its round and submission), so a faster GPU at a
higher hourly price wins when it finishes the job sooner; and the plan's job line for a stack that names one."""

from __future__ import annotations

import argparse
import json
from datetime import date

import pytest

from gpufleet.bench.mlperf import DEFAULT_SAMPLES, job_hours, job_size, load_workloads
from gpufleet.catalog.cli import add_commands, run_select

TODAY = date(2026, 12, 2)


def select(argv, capsys):
    parser = argparse.ArgumentParser(prog="gpufleet")
    add_commands(parser.add_subparsers(dest="command", required=True))
    code = run_select(parser.parse_args(["select", *argv]), today=TODAY)
    out = capsys.readouterr()
    return code, out.out, out.err


def offers(argv, capsys) -> list[dict]:
    code, out, err = select([*argv, "--json", "--limit", "0"], capsys)
    assert code == 0, err
    return json.loads(out)["offers"]


def test_every_row_names_its_round_submission_and_source():
    for work in load_workloads().values():
        assert work.rows
        for row in work.rows:
            assert row.round.startswith(("inference v", "training v")) and row.result > 0
            # inference paths start at the division; training repositories have no division folder (closed only)
            assert row.submission.startswith("closed/" if work.suite == "inference" else f"{row.submitter}/results/")
            assert row.source.startswith("mlcommons/") and " @ " in row.source and row.submission in row.source
            assert row.submission_id is None  # no public source readable here gives the ids (see the data file)


def test_the_seeds_bert_check_a100_against_t4():
    """The seed's A100-versus-T4 BERT comparison, from MLPerf Inference v0.7 (same round, same submitter)."""
    bert = load_workloads()["bert-99"]
    a100, t4 = bert.row("A100"), bert.row("T4")
    assert (a100.round, t4.round) == ("inference v0.7", "inference v0.7")
    assert a100.per_gpu / t4.per_gpu == pytest.approx(7.62, abs=0.01)  # per GPU; the seed's 4.7x was fine-tuning
    size = job_size(bert)
    assert size.reference_gpu == "A100" and dict(size.speed_factors)["T4"] == pytest.approx(t4.per_gpu / a100.per_gpu)
    assert job_hours(bert, "T4", 1) == pytest.approx(DEFAULT_SAMPLES / t4.per_gpu / 3600)


def test_the_cheaper_hourly_offer_loses_the_job(capsys):
    """T4 costs far less per hour than an 8x A100 node, and far more per BERT job: the job objective ranks the A100
    first, the hourly objective the T4."""
    argv = ["--gpu", "A100,T4", "--cloud", "aws", "--region", "us-east-1"]
    by_job = offers([*argv, "--objective", "job", "--workload", "bert-99"], capsys)
    by_hour = offers(argv, capsys)
    assert by_hour[0]["gpu"] == "T4" and by_job[0]["gpu"] == "A100"
    best_t4 = min((o for o in by_job if o["gpu"] == "T4"), key=lambda o: o["job_usd"])
    best_a100 = by_job[0]
    assert best_a100["usd_per_hour"] > 10 * best_t4["usd_per_hour"]
    assert best_a100["job_usd"] < best_t4["job_usd"] and best_a100["job_hours"] < best_t4["job_hours"]
    assert best_a100["mlperf"] == {"round": "inference v0.7", "submission": "closed/NVIDIA/results/DGX-A100_A100-SXM4x8_TRT",
                                   "result": 26625.2, "accelerators": 8, "per_gpu": 3328.15}
    # the figures follow from the rows: 1e9 samples at 3,328.15/s per GPU on 8 GPUs
    assert best_a100["job_hours"] == pytest.approx(DEFAULT_SAMPLES / (26625.2 / 8 * 8) / 3600, abs=0.01)


def test_gpus_without_a_row_have_no_job_figure_and_rank_last(capsys):
    ranked = offers(["--gpu", "A100,A10G", "--cloud", "aws", "--objective", "job", "--workload", "bert-99"], capsys)
    a10g = [o for o in ranked if o["gpu"] == "A10G"]
    assert a10g and all(o["job_usd"] is None and o["relative_speed"] is None and o["mlperf"] is None for o in a10g)
    assert ranked.index(a10g[0]) > max(i for i, o in enumerate(ranked) if o["gpu"] == "A100")


def test_the_table_names_the_rows_used(capsys):
    code, out, _ = select(["--gpu", "T4,A100", "--objective", "job", "--workload", "resnet50", "--limit", "3"], capsys)
    assert code == 0
    assert "job: 1,000,000,000 samples of resnet50 (MLPerf Inference Offline)" in out
    assert "T4: 6,112.2 samples/s per GPU (48,897.80 on 8; MLPerf inference v0.7, closed/NVIDIA/results/T4x8_TRT)" in out


@pytest.mark.parametrize("argv, flag", [
    (["--objective", "job"], "--workload"),
    (["--objective", "job", "--workload", "llama2_70b_lora_nope"], "--workload"),
    (["--objective", "job", "--workload", "llama2_70b_lora", "--job-samples", "5"], "--job-samples"),
    (["--workload", "bert-99"], "--workload"),
    (["--objective", "job", "--workload", "bert-99", "--job-gpu-hours", "10"], "--job-gpu-hours"),
    (["--objective", "job", "--workload", "bert-99", "--job-samples", "-5"], "--job-samples"),
])
def test_bad_job_arguments_are_one_message_and_exit_2(argv, flag, capsys):
    code, _, err = select(argv, capsys)
    assert code == 2 and f"`{flag}`" in err and err.startswith("error: invalid `gpufleet select`")


def test_the_plan_prices_the_stacks_job():
    from gpufleet.bench.mlperf import job_cost_lines
    from gpufleet.catalog.selector import select as select_instance
    from gpufleet.outputs import job_cost
    from gpufleet.spec import parse_cluster_spec

    spec = parse_cluster_spec({"cloud": "aws", "region": "us-east-2", "zone": "us-east-2a", "nodes": 2,
                               "accelerator": {"instance_type": "p5.48xlarge"}, "job": {"mlperf": "bert-99"}})
    row = job_cost(select_instance(spec))
    assert row["gpus"] == 16 and row["mlperf"]["round"] == "inference v3.1"
    assert row["hours"] == pytest.approx(DEFAULT_SAMPLES / (70169.7 / 8 * 16) / 3600, abs=0.01)
    assert row["usd"] == pytest.approx(row["hours"] * row["usd_per_hour"], rel=0.005)  # hours shown rounded
    assert job_cost_lines(row)[0].startswith("job: 1,000,000,000 samples of bert-99 on 16 x H100: 1.98 h, ")
    no_row = parse_cluster_spec({"cloud": "aws", "region": "us-east-1", "zone": "us-east-1a", "nodes": 1,
                                 "accelerator": {"instance_type": "g5.xlarge"}, "job": {"mlperf": "bert-99"}})
    assert job_cost_lines(job_cost(select_instance(no_row))) == [
        "job: 1,000,000,000 samples of bert-99 on 1 x A10G: not estimated (no published MLPerf bert-99 row for A10G)"]


def test_a_faster_gpu_at_a_higher_hourly_price_wins_the_training_job(capsys):
    """llama2_70b_lora (MLPerf Training): an 8x B200 node costs more per hour than an 8x H100 node and trains in
    11.24 instead of 28.07 minutes, so its run costs less; by the hour the H100 ranks first."""
    argv = ["--gpu", "H100,B200", "--cloud", "aws", "--region", "us-east-1", "--gpus-per-node", "8"]
    by_job = offers([*argv, "--objective", "job", "--workload", "llama2_70b_lora"], capsys)
    by_hour = offers(argv, capsys)
    assert by_hour[0]["gpu"] == "H100" and by_job[0]["gpu"] == "B200"
    b200, h100 = by_job[0], next(o for o in by_job if o["gpu"] == "H100")
    assert b200["usd_per_hour"] > h100["usd_per_hour"] and b200["job_usd"] < h100["job_usd"]
    assert b200["job_hours"] == round(11.24 / 60, 2) and h100["job_hours"] == round(28.07 / 60, 2)
    assert b200["job_usd"] == pytest.approx(b200["usd_per_hour"] * 11.24 / 60, abs=0.01)
    assert b200["mlperf"] == {"round": "training v5.0", "submission": "NVIDIA/results/nyx_n1_ngc25.04_nemo",
                              "result": 11.24, "accelerators": 8, "submission_id": None, "nodes": 1,
                              "minutes_to_train": 11.24}


def test_a_training_job_is_priced_only_at_a_published_gpu_count(capsys):
    """H100 has rows on 8 and 64 GPUs: 8 nodes of 8 get the 64-GPU time (5.23 min), 2 nodes get no figure."""
    argv = ["--gpu", "H100", "--cloud", "aws", "--region", "us-east-1", "--gpus-per-node", "8",
            "--objective", "job", "--workload", "llama2_70b_lora"]
    eight = offers([*argv, "--nodes", "8"], capsys)
    assert eight[0]["job_hours"] == round(5.23 / 60, 2) and eight[0]["mlperf"]["accelerators"] == 64
    assert eight[0]["job_usd"] == pytest.approx(eight[0]["usd_per_hour"] * 5.23 / 60, abs=0.01)
    two = offers([*argv, "--nodes", "2"], capsys)
    assert two and all(o["job_usd"] is None and o["job_hours"] is None and o["mlperf"] is None for o in two)


def test_the_plan_prices_a_training_run():
    from gpufleet.bench.mlperf import job_cost_lines, job_cost_row
    row = job_cost_row("llama2_70b_lora", DEFAULT_SAMPLES, "H200", 8, 60.0)
    assert row["hours"] == round(24.69 / 60, 2) and row["usd"] == pytest.approx(24.69, abs=0.01)
    assert job_cost_lines(row) == ["job: one training run of llama2_70b_lora on 8 x H200: 0.41 h, 24.69 USD at the "
                                   "stack's market (MLPerf training v4.0 NVIDIA/results/h200_ngc24.04_nemo, 24.69 "
                                   "minutes to train)"]
    assert job_cost_lines(job_cost_row("llama2_70b_lora", DEFAULT_SAMPLES, "H200", 16, 60.0)) == [
        "job: one training run of llama2_70b_lora on 16 x H200: not estimated (MLPerf llama2_70b_lora rows for H200 "
        "are on 8 GPUs, not 16)"]


def test_an_unknown_workload_lists_the_known_ones(capsys):
    code, _, err = select(["--objective", "job", "--workload", "gpt3"], capsys)
    assert code == 2 and "got 'gpt3'" in err and "bert-99, llama2_70b_lora, resnet50" in err


def test_a_stack_naming_a_training_workload_gets_its_run_priced():
    from gpufleet.bench.mlperf import job_cost_lines
    from gpufleet.catalog.selector import select as select_instance
    from gpufleet.outputs import job_cost
    from gpufleet.spec import parse_cluster_spec

    spec = parse_cluster_spec({"cloud": "aws", "region": "us-east-2", "zone": "us-east-2a", "nodes": 1,
                               "accelerator": {"instance_type": "p5.48xlarge"}, "job": {"mlperf": "llama2_70b_lora"}})
    row = job_cost(select_instance(spec))
    assert row["gpus"] == 8 and row["hours"] == round(28.07 / 60, 2) and row["mlperf"]["round"] == "training v4.0"
    assert row["usd"] == pytest.approx(row["usd_per_hour"] * 28.07 / 60, abs=0.01)
    assert job_cost_lines(row)[0].startswith("job: one training run of llama2_70b_lora on 8 x H100: 0.47 h, ")
