"""The per-job textfile collector (job-metrics) run against a recorded cgroup v2 tree, its output checked by
`promtool check metrics`; and the GPU -> job files gpufleet-run keeps for dcgm-exporter's --hpc-job-mapping-dir."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.validators import require_tool

from .conftest import FIXTURES, node_script, write_env
from .test_scripts import run

CGROUP = FIXTURES / "cgroup"
JOBS = "gpufleet.slice/gpufleet-jobs.slice"
PROMTOOL_HINT = "install it with `apt-get install -y prometheus` (Debian package, ships /usr/bin/promtool)"
SAMPLE = re.compile(r'^(gpufleet_job_[a-z_]+)\{hpc_job="((?:[^"\\]|\\.)*)"\} (\S+)$')


@pytest.fixture(scope="module")
def collector(tmp_path_factory) -> Path:
    return node_script(tmp_path_factory.mktemp("node"), "usr/local/lib/gpufleet/job-metrics")


def collect(collector: Path, cgroup_root: Path, state: Path) -> str:
    env = dict(os.environ, GPUFLEET_CGROUP_ROOT=str(cgroup_root), GPUFLEET_STATE_DIR=str(state))
    done = subprocess.run([str(collector)], env=env, capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (state / "textfile").iterdir()) == ["gpufleet_jobs.prom"]  # no temporary left
    return (state / "textfile" / "gpufleet_jobs.prom").read_text()


def samples(text: str) -> dict[tuple[str, str], float]:
    found = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            match = SAMPLE.match(line)
            assert match, line
            found[(match[1], match[2])] = float(match[3])
    return found


def promtool_check_metrics(text: str) -> subprocess.CompletedProcess:
    tool = require_tool("promtool", PROMTOOL_HINT)
    return subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)


def test_each_job_in_the_slice_gets_cpu_memory_and_tasks_from_its_cgroup(collector, tmp_path):
    text = collect(collector, CGROUP, tmp_path / "state")
    assert samples(text) == {
        ("gpufleet_job_cpu_seconds_total", "eval-7"): 1.5,
        ("gpufleet_job_cpu_seconds_total", "train-1"): 8123.456789,
        ("gpufleet_job_memory_bytes", "eval-7"): 2147483648,
        ("gpufleet_job_memory_bytes", "train-1"): 85899345920,
        ("gpufleet_job_memory_peak_bytes", "train-1"): 103079215104,  # eval-7's kernel has no memory.peak
        ("gpufleet_job_tasks", "eval-7"): 4,
        ("gpufleet_job_tasks", "train-1"): 97,
    }
    assert "# TYPE gpufleet_job_cpu_seconds_total counter" in text and "# TYPE gpufleet_job_tasks gauge" in text


def test_the_job_dashboard_knows_exactly_the_metrics_the_collector_writes(collector, tmp_path):
    from gpufleet.monitoring.dashboards import JOB_METRICS
    assert {metric for metric, _ in samples(collect(collector, CGROUP, tmp_path / "state"))} == set(JOB_METRICS)


def test_the_output_passes_promtool_check_metrics(collector, tmp_path):
    text = collect(collector, CGROUP, tmp_path / "state")
    result = promtool_check_metrics(text)
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stdout + result.stderr


def test_promtool_check_metrics_rejects_a_counter_without_total():
    result = promtool_check_metrics("# HELP gpufleet_job_cpu_seconds x\n# TYPE gpufleet_job_cpu_seconds counter\n"
                                    'gpufleet_job_cpu_seconds{hpc_job="a"} 1\n')
    assert result.returncode != 0 and "_total" in result.stdout + result.stderr


def test_a_unit_name_with_systemd_escapes_is_a_valid_label(collector, tmp_path):
    root = tmp_path / "cgroup"
    shutil.copytree(CGROUP, root)
    escaped = root / JOBS / "a\\x2db.service"
    escaped.mkdir()
    (escaped / "cpu.stat").write_text("usage_usec 250\nuser_usec 200\nsystem_usec 50\n")
    text = collect(collector, root, tmp_path / "state")
    assert 'gpufleet_job_cpu_seconds_total{hpc_job="a\\\\x2db"} 0.00025' in text.splitlines()
    assert promtool_check_metrics(text).returncode == 0


def test_no_jobs_or_no_slice_replaces_the_last_file_with_an_empty_one(collector, tmp_path):
    state = tmp_path / "state"
    collect(collector, CGROUP, state)
    empty = tmp_path / "cgroup"
    (empty / JOBS).mkdir(parents=True)
    assert collect(collector, empty, state) == ""
    assert collect(collector, tmp_path / "no-cgroup", state) == ""


GPU_JOBS = "gpu-jobs"


def map_gpus(node: Path, tmp_path: Path, *args: str, dev: Path | None = None) -> subprocess.CompletedProcess:
    done, _ = run(node / "usr/local/bin/gpufleet-run", tmp_path, {}, "--map-gpus", *args,
                  extra_env={"GPUFLEET_DEV": str(dev or tmp_path / "dev")})
    return done


def mapping(tmp_path: Path) -> dict[str, list[str]]:
    """GPU index -> jobs, read the way dcgm-exporter's HPC mapper reads the folder (numeric names, one job a line)."""
    folder = tmp_path / "run" / GPU_JOBS
    return {p.name: p.read_text().splitlines() for p in sorted(folder.iterdir()) if p.name.isdigit()}


@pytest.fixture(scope="module")
def node(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("node")
    node_script(root, "usr/local/bin/gpufleet-run")
    return root / "node"


def test_jobs_are_added_to_and_removed_from_each_gpu_file(node, tmp_path):
    assert map_gpus(node, tmp_path, "add", "train-1", "0,1").returncode == 0
    assert map_gpus(node, tmp_path, "add", "eval-7", "1").returncode == 0
    assert mapping(tmp_path) == {"0": ["train-1"], "1": ["train-1", "eval-7"]}
    assert map_gpus(node, tmp_path, "add", "train-1", "0,1").returncode == 0  # a restart adds no duplicate
    assert mapping(tmp_path) == {"0": ["train-1"], "1": ["eval-7", "train-1"]}
    assert map_gpus(node, tmp_path, "remove", "train-1", "0,1").returncode == 0
    # A GPU whose file names no job must have no file: dcgm-exporter would drop that GPU's metrics.
    assert mapping(tmp_path) == {"1": ["eval-7"]}
    assert map_gpus(node, tmp_path, "remove", "eval-7", "1").returncode == 0
    assert mapping(tmp_path) == {}
    leftovers = {p.name for p in (tmp_path / "run" / GPU_JOBS).iterdir()} - {".lock"}
    assert leftovers == set()


def test_all_means_every_gpu_device_of_the_node(node, tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm", "nvidia-caps"):
        (dev / name).touch()
    assert map_gpus(node, tmp_path, "add", "train-1", "all", dev=dev).returncode == 0
    assert mapping(tmp_path) == {"0": ["train-1"], "1": ["train-1"], "2": ["train-1"]}


def test_concurrent_starts_keep_every_job(node, tmp_path):
    script = node / "usr/local/bin/gpufleet-run"
    env = dict(os.environ, GPUFLEET_RUN_DIR=str(tmp_path / "run"), GPUFLEET_DEV=str(tmp_path / "dev"))
    running = [subprocess.Popen([str(script), "--map-gpus", "add", f"job-{i}", "0"], env=env) for i in range(8)]
    assert [p.wait(timeout=20) for p in running] == [0] * 8
    assert sorted(mapping(tmp_path)["0"]) == [f"job-{i}" for i in range(8)]


def run_job(node: Path, tmp_path: Path, *args: str, extra_env: dict | None = None) -> tuple[int, list[str]]:
    profile = tmp_path / "profile.sh"
    profile.write_text(f"set -a\n. {write_env(tmp_path / 'job.env', {})}\nset +a\n")
    env = {"GPUFLEET_JOB_PROFILE": str(profile), **(extra_env or {})}
    done, fake = run(node / "usr/local/bin/gpufleet-run", tmp_path, {}, *args, extra_env=env)
    recorded = fake / "systemd-run.args"
    return done.returncode, recorded.read_text().splitlines() if recorded.exists() else []


def test_the_job_unit_records_its_gpus_when_it_starts_and_stops(node, tmp_path):
    code, args = run_job(node, tmp_path, "--name", "train-1.service", "--", "python", "train.py",
                         extra_env={"CUDA_VISIBLE_DEVICES": "2,3"})
    assert code == 0
    self = str((node / "usr/local/bin/gpufleet-run").resolve())
    assert "--unit=train-1" in args
    assert f"ExecStartPre=+{self} --map-gpus add train-1 2,3" in args
    assert f"ExecStopPost=+{self} --map-gpus remove train-1 2,3" in args
    assert args[args.index(f"ExecStartPre=+{self} --map-gpus add train-1 2,3") - 1] == "-p"


def test_without_a_numeric_cuda_visible_devices_the_job_has_every_gpu(node, tmp_path):
    for visible in ({}, {"CUDA_VISIBLE_DEVICES": "GPU-8a1c7f3e-0000-0000-0000-000000000000"}):
        code, args = run_job(node, tmp_path, "--name", "train-1", "--", "true", extra_env=visible)
        assert code == 0 and any(a.endswith("--map-gpus add train-1 all") for a in args), args


@pytest.mark.parametrize("name", ["two words", "a$b", "x%n", ""])
def test_a_job_name_outside_the_unit_alphabet_is_refused(node, tmp_path, name):
    code, args = run_job(node, tmp_path, "--name", name, "--", "true")
    assert code == 2 and args == []
