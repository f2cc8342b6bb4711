"""The node's performance check (perf-check, node.health.performance) against RECORDED outputs of the real tools:
nccl-tests, nvbandwidth, the CUDA samples' bandwidthTest, dcgmproftester and gpufleet's own PyTorch benchmark (run on
an H200). Healthy recordings pass; degraded ones (a half-speed link, a PCIe link trained down, a GPU at low clocks, a
real A100 host below Azure's threshold) fail with the figure in the reason; a missing figure or tool is "not
compared". Provenance of every fixture: tests/fixtures/node/perf/README.md."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpufleet.bench.expected import node_expectation

from .conftest import FAKE_BIN, FIXTURES, node_script

RECORDED = FIXTURES / "perf"
PERF_BIN = FIXTURES / "perf-bin"
SCRIPT = Path(__file__).resolve().parents[2] / "cloud_init" / "files" / "usr" / "local" / "lib" / "gpufleet" / "perf-check"
H100 = node_expectation("aws", "p5.48xlarge", "H100", None)
A100 = node_expectation("aws", "p4d.24xlarge", "A100", None)
H200 = node_expectation("gcp", "a3-ultragpu-8g", "H200", None)


def load_module():
    loader = importlib.machinery.SourceFileLoader("perf_check", str(SCRIPT))
    spec = importlib.util.spec_from_loader("perf_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


perf = load_module()


def text(name: str) -> str:
    return (RECORDED / name).read_text()


# --- parsers -------------------------------------------------------------------------------------------------------

def test_nccl_rows_with_srun_and_mpi_prefixes():
    assert perf.parse_nccl_busbw(text("nccl-2xp5-efa.txt"), 1 << 30) == (440.96, 0)
    assert perf.parse_nccl_busbw(text("nccl-2xp5-efa.txt"), 17179869184) == (487.26, 0)
    assert perf.parse_nccl_busbw(text("nccl-aws-batch-p5.txt"), 1 << 30) == (441.81, 0)
    assert perf.parse_nccl_busbw(text("nccl-2xp4de-efa.txt"), 1 << 30) == (76.86, 0)
    assert perf.parse_nccl_busbw(text("nccl-2xp4de-efa.txt"), 17179869184) == (None, None)  # not in the sweep


def test_nccl_wrong_results_are_counted():
    bad = (FIXTURES / "health" / "nccl-bad.txt").read_text()
    assert perf.parse_nccl_busbw(bad, 1 << 30) == (648.02, 3)


def test_nvbandwidth_matrices():
    assert perf.parse_nvbandwidth(text("nvbandwidth-8xh800.txt"), "host_to_device_memcpy_ce") == [
        55.28, 55.30, 55.32, 55.30, 55.31, 55.34, 55.32, 55.34]
    assert min(perf.parse_nvbandwidth(text("nvbandwidth-8xh800.txt"), "device_to_host_memcpy_ce")) == 55.09
    newer = text("nvbandwidth-v010-d2h-8gpu.txt")
    assert len(perf.parse_nvbandwidth(newer, "device_to_host_memcpy_ce")) == 8
    assert perf.parse_nvbandwidth(newer, "host_to_device_memcpy_ce") == []


def test_bandwidth_test_and_dcgmproftester():
    assert perf.parse_bandwidth_test(text("bandwidthTest-a100-40gb.txt")) == {"h2d_gbps": 12.3, "d2h_gbps": 13.2}
    assert perf.parse_dcgmproftester(text("dcgmproftester-a100-40gb.txt")) == [pytest.approx(252.889, abs=1e-3)]
    assert perf.parse_dcgmproftester(text("dcgmproftester12-exponent.txt")) == [pytest.approx(192.0)]
    assert perf.parse_dcgmproftester("no rates here") == []


# --- comparisons: healthy recordings pass, degraded ones fail with the figure in the reason -------------------------

def figure(expect: str, metric: str):
    return perf.parse_expect(expect)[metric]


@pytest.mark.parametrize("expect, metric, values, tool, ok", [
    (H100, "h2d_gbps", perf.parse_nvbandwidth(text("nvbandwidth-8xh800.txt"), "host_to_device_memcpy_ce"),
     "nvbandwidth", True),
    (H100, "h2d_gbps", perf.parse_nvbandwidth(text("nvbandwidth-8xh800-gpu5-gen4.txt"), "host_to_device_memcpy_ce"),
     "nvbandwidth", False),
    (H100, "d2h_gbps", perf.parse_nvbandwidth(text("nvbandwidth-8xh800-gpu5-gen4.txt"), "device_to_host_memcpy_ce"),
     "nvbandwidth", False),
    (A100, "h2d_gbps", [perf.parse_bandwidth_test(text("bandwidthTest-a100-40gb.txt"))["h2d_gbps"]],
     "bandwidthTest", False),
    (A100, "matmul_tflops", perf.parse_dcgmproftester(text("dcgmproftester-a100-40gb.txt")), "dcgmproftester12",
     True),
    (A100, "matmul_tflops", perf.parse_dcgmproftester(text("dcgmproftester-a100-40gb-low-clocks.txt")),
     "dcgmproftester12", False),
    (H100, "allreduce_intranode", perf.parse_nccl_busbw(text("nccl-2xp5-efa.txt"), 17179869184)[0],
     "all_reduce_perf", True),
    (H100, "allreduce_intranode", perf.parse_nccl_busbw(text("nccl-2xp5-efa-half-link.txt"), 17179869184)[0],
     "all_reduce_perf", False),
    (H200, "h2d_gbps", json.loads(text("torch-copy-h200.json"))["h2d_gbps"], "pytorch", True),
    (H200, "matmul_tflops", json.loads(text("torch-matmul-h200.json"))["matmul_tflops"], "pytorch", True),
])
def test_recorded_outputs_against_the_figures(expect, metric, values, tool, ok):
    result = perf.compare(metric, figure(expect, metric), values, tool)
    assert result["compared"] and result["ok"] is ok, result
    floor = figure(expect, metric)[0] * figure(expect, metric)[1]
    assert f"{floor:.1f}" in result["detail"] and tool in result["detail"]
    if not ok:
        assert "below" in result["detail"]


def test_the_slowest_gpu_is_named():
    values = perf.parse_nvbandwidth(text("nvbandwidth-8xh800-gpu5-gen4.txt"), "host_to_device_memcpy_ce")
    result = perf.compare("h2d_gbps", figure(H100, "h2d_gbps"), values, "nvbandwidth")
    assert result["detail"].startswith("GPU 5 26.0 GB/s below 48.0 GB/s (figure 48 GB/s x tolerance 1")


def test_no_figure_or_no_tool_is_not_compared():
    none = perf.compare("matmul_tflops", None, [700.0], "pytorch")
    assert (none["compared"], none["ok"], none["detail"]) == (False, True,
                                                               "not compared: no published figure for this type")
    missing = perf.compare("h2d_gbps", (48.0, 1.0, None), None, "nvbandwidth is not on the image")
    assert not missing["compared"] and missing["ok"] and missing["detail"].startswith("not compared: nvbandwidth")


@pytest.mark.parametrize("fixture", ["perf-check-h200.json", "perf-check-h200-healthy.json"])
def test_the_recorded_h200_runs_passed_against_the_shipped_figures(fixture):
    """The device runs (tests/fixtures/node/perf/) used the H200 figures this repository ships."""
    recorded = json.loads(text(fixture))["results"]
    expect = perf.parse_expect(H200)
    for result in recorded:
        if result["compared"]:
            assert result["ok"] and result["expected"] == expect[result["metric"]][0], result


def test_the_recorded_contended_h200_failed_its_matmul_figure():
    """On the same H200 with a second process busy on matrix products, the check refused the node."""
    results = {r["metric"]: r for r in json.loads(text("perf-check-h200-contended.json"))["results"]}
    assert results["matmul_tflops"]["compared"] and not results["matmul_tflops"]["ok"]
    assert results["matmul_tflops"]["achieved"] < 635.6 <= perf.parse_expect(H200)["matmul_tflops"][0] * 0.8 + 0.01
    again = perf.compare("matmul_tflops", figure(H200, "matmul_tflops"), results["matmul_tflops"]["per_gpu"], "pytorch")
    assert not again["ok"] and "below 635.6 TFLOP/s" in again["detail"]
    assert results["h2d_gbps"]["ok"] and results["d2h_gbps"]["ok"]


# --- the whole script with fake tools on PATH ------------------------------------------------------------------------

def run_check(tmp_path: Path, expect: str, tools: dict[str, str], gpus: int = 8, python: str = "/bin/false"):
    """perf-check with only `tools` (fake name -> recorded fixture) on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, fixture in tools.items():
        (bin_dir / name).symlink_to(PERF_BIN / name)
        shutil.copy(RECORDED / fixture, tmp_path / f"{name}.txt")
    for name in ("torch-copy", "torch-matmul"):
        shutil.copy(RECORDED / f"{name}-h200.json", tmp_path / f"{name}.json")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FAKE_DIR": str(tmp_path), "GPUFLEET_PERF_EXPECT": expect,
           "GPUFLEET_GPUS": str(gpus), "GPUFLEET_STATE_DIR": str(tmp_path / "state"),
           "GPUFLEET_ENV_FILE": str(tmp_path / "none"), "GPUFLEET_PERF_PYTHON": python}
    done = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    results = {r["metric"]: r for r in json.loads(done.stdout)["results"]}
    metrics = (tmp_path / "state" / "textfile" / "gpufleet_perf.prom").read_text()
    return done.returncode, results, metrics


def test_p5_recordings_through_the_script_and_its_metrics(tmp_path):
    code, results, metrics = run_check(tmp_path, H100, {"nvbandwidth": "nvbandwidth-8xh800.txt",
                                                        "dcgmproftester12": "dcgmproftester12-exponent.txt",
                                                        "all_reduce_perf": "nccl-2xp5-efa.txt"})
    assert results["allreduce_intranode"]["achieved"] == 487.26
    # dcgmproftester's sample (1.9e5 gflops) is a real run but not an H100's rate: the matmul floor fails it.
    assert not results["matmul_tflops"]["ok"] and code == 1
    assert all(results[m]["ok"] for m in ("h2d_gbps", "d2h_gbps", "allreduce_intranode"))
    assert 'gpufleet_perf_achieved{metric="h2d_gbps",unit="GB/s"} 55.28' in metrics
    assert 'gpufleet_perf_ok{metric="matmul_tflops",unit="TFLOP/s"} 0' in metrics
    assert (tmp_path / "all_reduce_perf.args").read_text().split()[:4] == ["-b", "17179869184", "-e", "17179869184"]


def test_pytorch_is_used_when_the_image_has_it(tmp_path):
    code, results, _ = run_check(tmp_path, H200, {}, gpus=1, python=str(PERF_BIN / "torch-python"))
    assert code == 0
    assert results["h2d_gbps"]["tool"] == "pytorch" and results["h2d_gbps"]["achieved"] == pytest.approx(55.13, 0.01)
    assert results["matmul_tflops"]["achieved"] == pytest.approx(771.19, 0.01)
    assert results["allreduce_intranode"]["detail"] == "not compared: all_reduce_perf (nccl-tests) is not on the image"


@pytest.mark.parametrize("tools, failing", [
    ({"nvbandwidth": "nvbandwidth-8xh800-gpu5-gen4.txt"}, {"h2d_gbps", "d2h_gbps"}),
    ({"all_reduce_perf": "nccl-2xp5-efa-half-link.txt"}, {"allreduce_intranode"}),
    ({"nvbandwidth": "nvbandwidth-v010-d2h-8gpu.txt"}, {"h2d_gbps", "d2h_gbps"}),  # a test's matrix is missing
    ({"bandwidthTest": "bandwidthTest-a100-40gb.txt"}, {"h2d_gbps", "d2h_gbps"}),
])
def test_degraded_recordings_fail_the_node(tmp_path, tools, failing):
    code, results, _ = run_check(tmp_path, H100, tools)
    assert code == 1
    assert {m for m, r in results.items() if not r["ok"]} == failing


def test_nothing_on_the_image_is_not_compared_and_passes(tmp_path):
    code, results, metrics = run_check(tmp_path, H100, {})
    assert code == 0 and not any(r["compared"] for r in results.values())
    assert "gpufleet_perf_ok{" not in metrics and 'gpufleet_perf_compared{metric="h2d_gbps",unit="GB/s"} 0' in metrics


def test_the_health_check_reports_the_figure(tmp_path):
    """gpufleet-health runs perf-check and fails the node with perf-check's reason."""
    script = node_script(tmp_path / "node", "usr/local/sbin/gpufleet-health")
    perf_script = node_script(tmp_path / "node", "usr/local/lib/gpufleet/perf-check")
    fake = tmp_path / "fake"
    fake.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvbandwidth").symlink_to(PERF_BIN / "nvbandwidth")
    shutil.copy(RECORDED / "nvbandwidth-8xh800-gpu5-gen4.txt", fake / "nvbandwidth.txt")
    for name, source in {"query.csv": "query-h100x8.csv", "row-remapper.txt": "row-remapper-ok.txt",
                         "dmesg.txt": "dmesg-clean.txt"}.items():
        shutil.copy(FIXTURES / "health" / source, fake / name)
    env = {"PATH": f"{bin_dir}:{FAKE_BIN}:/usr/bin:/bin", "FAKE_DIR": str(fake), "GPUFLEET_ENV_FILE": "/nonexistent",
           "GPUFLEET_STATE_DIR": str(tmp_path / "state"), "GPUFLEET_GPUS": "8", "GPUFLEET_GPU_MODEL": "H100",
           "GPUFLEET_GPU_MEMORY_GIB": "80", "GPUFLEET_FABRIC": "tcp", "GPUFLEET_PERF_EXPECT": H100,
           "GPUFLEET_PERF_CHECK": str(perf_script), "GPUFLEET_PERF_PYTHON": "/bin/false",
           "GPUFLEET_HEALTH_REPORTER": str(FAKE_BIN / "report-health")}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stdout
    assert "FAIL perf_h2d_gbps: GPU 5 26.0 GB/s below 48.0 GB/s (figure 48 GB/s" in done.stdout
    assert "ok   perf_matmul_tflops: not compared: neither PyTorch nor dcgmproftester is on the image" in done.stdout
    report = json.loads((tmp_path / "state" / "health.json").read_text())
    assert not report["healthy"]
    assert os.path.exists(tmp_path / "state" / "textfile" / "gpufleet_perf.prom")


# --- what the cloud component writes into the node's config ----------------------------------------------------------

def test_the_node_config_carries_the_types_figures_only_when_asked():
    from gpufleet.boot import user_data_for

    from .conftest import aws_selection, env_values, written_files
    off = written_files(user_data_for(aws_selection(), "gpufleet-test"))
    assert "GPUFLEET_PERF_EXPECT" not in env_values(off["/etc/gpufleet/node.env"]["content"])
    assert "/usr/local/lib/gpufleet/perf-check" not in off
    on = aws_selection(node={"health": {"performance": {"enabled": True, "tolerance": 0.9}}})
    files = written_files(user_data_for(on, "gpufleet-test"))
    assert env_values(files["/etc/gpufleet/node.env"]["content"])["GPUFLEET_PERF_EXPECT"] == (
        "h2d_gbps=48:0.9 d2h_gbps=48:0.9 matmul_tflops=794.5:0.9 allreduce_intranode=460:0.9:17179869184")
    assert files["/usr/local/lib/gpufleet/perf-check"]["permissions"] == "0755"
    assert user_data_for(on, "gpufleet-test") == user_data_for(on, "gpufleet-test")


@pytest.mark.parametrize("tolerance", [0, 1.5, -0.2, "x"])
def test_a_bad_tolerance_is_refused_with_its_path(tolerance):
    from gpufleet.spec import parse_cluster_spec
    from gpufleet.spec.errors import SpecError

    from .conftest import aws_spec
    with pytest.raises(SpecError) as err:
        parse_cluster_spec(aws_spec(node={"health": {"performance": {"enabled": True, "tolerance": tolerance}}}))
    assert "node.health.performance.tolerance" in str(err.value)
