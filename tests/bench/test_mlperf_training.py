"""MLPerf Training's score from recorded logs (components/bench/mlperf_training.py): every training row of
data/mlperf.yaml is the olympic mean of its submission's runs, and the rules' edge cases (a non-converged run is the
slowest; two make the result invalid) hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.bench.mlperf import load_workloads
from gpufleet.bench.mlperf_training import LogError, Run, main, olympic_minutes, parse_run, score_folder

FIXTURES = Path(__file__).parent.parent / "fixtures" / "mlperf_training"


def test_every_training_row_is_the_olympic_mean_of_its_recorded_logs():
    rows = [r for w in load_workloads().values() if w.training for r in w.rows]
    assert {r.gpu for r in rows} >= {"H100", "H200", "B200"}
    for row in rows:
        system = row.submission.rsplit("/", 1)[1]
        scored = score_folder(FIXTURES / system / "llama2_70b_lora")
        assert scored["benchmark"] == "llama2_70b_lora" and scored["runs"] == row.runs == 10
        assert scored["minutes"] == row.result, row.submission
        assert system in row.source and row.source.startswith("mlcommons/training_results_v")


def test_the_score_drops_the_fastest_and_slowest_run():
    scored = score_folder(FIXTURES / "eos_ngc24.04_nemo" / "llama2_70b_lora")
    runs = sorted(scored["run_minutes"])
    assert runs[0] == 23.54 and runs[-1] == 30.82  # the two dropped
    assert scored["minutes"] == pytest.approx(sum(runs[1:-1]) / 8, abs=0.01)
    assert scored["minutes"] != pytest.approx(sum(runs) / 10, abs=0.01)


def test_a_run_is_run_stop_minus_run_start():
    text = (FIXTURES / "h200_ngc24.04_nemo" / "llama2_70b_lora" / "result_0.txt").read_text()
    run = parse_run(text)
    assert run.converged and run.platform == "1xNVIDIA HGX H200" and run.minutes == pytest.approx(23.52, abs=0.005)


def test_a_non_converged_run_counts_as_slowest_and_two_invalidate():
    ok = [Run(minutes=m, converged=True, benchmark="b", platform="p") for m in (10.0, 11.0, 12.0, 13.0)]
    failed = Run(minutes=1.0, converged=False, benchmark="b", platform="p")  # fast but failed: dropped as slowest
    assert olympic_minutes([*ok, failed]) == pytest.approx((11 + 12 + 13) / 3)
    with pytest.raises(LogError, match="2 runs did not converge"):
        olympic_minutes([*ok, failed, failed])


def test_a_log_without_run_stop_is_refused(tmp_path, capsys):
    text = (FIXTURES / "h200_ngc24.04_nemo" / "llama2_70b_lora" / "result_0.txt").read_text()
    cut = "\n".join(line for line in text.splitlines() if '"run_stop"' not in line)
    with pytest.raises(LogError, match="no run_stop"):
        parse_run(cut, "result_0.txt")
    (tmp_path / "result_0.txt").write_text(cut)
    assert main([str(tmp_path)]) == 2 and "no run_stop" in capsys.readouterr().err
