"""The node acceptance check, run against recorded nvidia-smi/dmesg/dcgmi/nccl-tests outputs through fake commands
on PATH and a fake sysfs: healthy fixtures pass, and each failure mode fails exactly its own check."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .conftest import FAKE_BIN, FIXTURES, node_script, write_env

RECORDED = FIXTURES / "health"

P5 = {"GPUFLEET_CLOUD": "aws", "GPUFLEET_INSTANCE_TYPE": "p5.48xlarge", "GPUFLEET_GPU_MODEL": "H100",
      "GPUFLEET_GPUS": "8", "GPUFLEET_GPU_MEMORY_GIB": "80", "GPUFLEET_CUDA": "13.0", "GPUFLEET_MIN_DRIVER_BRANCH": "580",
      "GPUFLEET_NVSWITCH": "1", "GPUFLEET_FABRIC": "efa", "GPUFLEET_RDMA_DEVICES": "32",
      "GPUFLEET_HEALTH_DCGM_DIAG": "0", "GPUFLEET_HEALTH_NCCL_ALLREDUCE": "0"}
ND_H100 = dict(P5, GPUFLEET_CLOUD="azure", GPUFLEET_INSTANCE_TYPE="Standard_ND96isr_H100_v5",
               GPUFLEET_FABRIC="infiniband", GPUFLEET_RDMA_DEVICES="8")
A3_HIGH = dict(P5, GPUFLEET_CLOUD="gcp", GPUFLEET_INSTANCE_TYPE="a3-highgpu-8g", GPUFLEET_FABRIC="tcpx",
               GPUFLEET_RDMA_DEVICES="4")
A3_MEGA_TCP = dict(P5, GPUFLEET_CLOUD="gcp", GPUFLEET_INSTANCE_TYPE="a3-megagpu-8g", GPUFLEET_FABRIC="tcp-multinic",
                   GPUFLEET_RDMA_DEVICES="8")
A3_ULTRA = dict(P5, GPUFLEET_CLOUD="gcp", GPUFLEET_INSTANCE_TYPE="a3-ultragpu-8g", GPUFLEET_GPU_MODEL="H200",
                GPUFLEET_GPU_MEMORY_GIB="141", GPUFLEET_FABRIC="roce", GPUFLEET_RDMA_DEVICES="8")
H200_QUERY = "query-h200x8.csv"
G6E = dict(P5, GPUFLEET_INSTANCE_TYPE="g6e.xlarge", GPUFLEET_GPU_MODEL="L40S", GPUFLEET_GPUS="1",
           GPUFLEET_GPU_MEMORY_GIB="44", GPUFLEET_NVSWITCH="0", GPUFLEET_FABRIC="tcp", GPUFLEET_RDMA_DEVICES="0")
H100_OUTPUTS = {"query.csv": "query-h100x8.csv", "row-remapper.txt": "row-remapper-ok.txt",
                "dmesg.txt": "dmesg-clean.txt", "dcgmi.txt": "dcgmi-pass.txt", "nccl.txt": "nccl-ok.txt"}
G6E_OUTPUTS = dict(H100_OUTPUTS, **{"query.csv": "query-l40s.csv", "row-remapper.txt": "row-remapper-l40s.txt"})


@pytest.fixture(scope="module")
def health_script(tmp_path_factory) -> Path:
    return node_script(tmp_path_factory.mktemp("health"), "usr/local/sbin/gpufleet-health")


def fake_sysfs(root: Path, fabric: str, count: int) -> None:
    ib = root / "class" / "infiniband"
    drivers = root / "bus" / "drivers"
    if fabric == "efa":
        (drivers / "efa").mkdir(parents=True)
        for i in range(count):
            (ib / f"rdmap{i}s0" / "device").mkdir(parents=True)
            (ib / f"rdmap{i}s0" / "device" / "driver").symlink_to(drivers / "efa")
    elif fabric in ("infiniband", "roce"):
        layer = "InfiniBand" if fabric == "infiniband" else "Ethernet"
        for i in range(count):
            (ib / f"mlx5_ib{i}" / "ports" / "1").mkdir(parents=True)
            (ib / f"mlx5_ib{i}" / "ports" / "1" / "link_layer").write_text(layer + "\n")
            (ib / f"mlx5_ib{i}" / "ports" / "1" / "state").write_text("4: ACTIVE\n")
        if fabric == "infiniband":  # Azure accelerated networking: an Ethernet mlx5 device, not InfiniBand
            (ib / "mlx5_an0" / "ports" / "1").mkdir(parents=True)
            (ib / "mlx5_an0" / "ports" / "1" / "link_layer").write_text("Ethernet\n")
    elif fabric in ("tcpx", "tcpxo"):
        for name in ["lo", "docker0", "enp0s12"] + [f"enp{i}s0" for i in range(6, 6 + count)]:
            (root / "class" / "net" / name).mkdir(parents=True)
    elif fabric == "tcp-multinic":  # gVNIC interfaces (driver gve) beside loopback and a docker bridge
        (drivers / "gve").mkdir(parents=True)
        for name in ["lo", "docker0"]:
            (root / "class" / "net" / name).mkdir(parents=True)
        for name in ["enp0s12"] + [f"enp{i}s0" for i in range(6, 6 + count)]:
            (root / "class" / "net" / name / "device").mkdir(parents=True)
            (root / "class" / "net" / name / "device" / "driver").symlink_to(drivers / "gve")


_SYSFS: dict = {}


def shared_sysfs(base: Path, fabric: str, count: int) -> Path:
    """One fake sysfs per (fabric, count), shared by the cases (the file system here is slow to clean up)."""
    if (fabric, count) not in _SYSFS:
        root = base / f"sys-{fabric}-{count}"
        if not root.exists():
            fake_sysfs(root, fabric, count)
        _SYSFS[(fabric, count)] = root
    return _SYSFS[(fabric, count)]


def run_health(health_script, tmp_path, env, outputs, rdma_count=None, states=None, files=None):
    fake = tmp_path / "fake"
    fake.mkdir()
    for name, recorded in outputs.items():
        shutil.copy(RECORDED / recorded, fake / name)
    for name, content in {"nvidia-fabricmanager.service.state": "active", "fm.version": "580.95.05",
                          **(states or {})}.items():
        (fake / name).write_text(content + "\n")
    state = tmp_path / "state"
    state.mkdir()
    for name, content in (files or {}).items():
        (state / name).write_text(content)
    count = int(env["GPUFLEET_RDMA_DEVICES"]) if rdma_count is None else rdma_count
    sysfs = shared_sysfs(health_script.parent.parent, env["GPUFLEET_FABRIC"], count)
    node_env = write_env(tmp_path / "node.env", env)
    process_env = dict(os.environ, PATH=f"{FAKE_BIN}:{os.environ['PATH']}", FAKE_DIR=str(fake),
                       GPUFLEET_ENV_FILE=str(node_env), GPUFLEET_STATE_DIR=str(state),
                       GPUFLEET_SYSFS_ROOT=str(sysfs), GPUFLEET_HEALTH_REPORTER=str(FAKE_BIN / "report-health"))
    done = subprocess.run([sys.executable, str(health_script)], env=process_env, capture_output=True, text=True,
                          timeout=30)
    report = json.loads((state / "health.json").read_text())
    reported = (fake / "reported").read_text() if (fake / "reported").exists() else ""
    return done, report, reported, state


def failed_checks(report) -> list[str]:
    return [c["check"] for c in report["checks"] if not c["ok"]]


HEALTHY = [
    ("p5-efa-nvswitch", P5, H100_OUTPUTS, {}),
    ("nd-h100-infiniband", ND_H100, H100_OUTPUTS, {}),
    ("a3-high-tcpx", A3_HIGH, H100_OUTPUTS, {}),
    ("a3-mega-multi-nic-tcp", A3_MEGA_TCP, H100_OUTPUTS, {}),
    ("a3-ultra-roce", A3_ULTRA, dict(H100_OUTPUTS, **{"query.csv": H200_QUERY}), {}),
    ("g6e-single-l40s", G6E, G6E_OUTPUTS, {}),
    ("application-xid-13-is-not-fatal", P5, dict(H100_OUTPUTS, **{"dmesg.txt": "dmesg-xid13.txt"}), {}),
    ("with-dcgm-diag-and-nccl", dict(P5, GPUFLEET_HEALTH_DCGM_DIAG="1", GPUFLEET_HEALTH_NCCL_ALLREDUCE="1"),
     H100_OUTPUTS, {}),
]


FAILURES = [
    ("gpu-missing", P5, {"query.csv": "query-h100x7.csv"}, {}, ["gpu_count"]),
    ("wrong-gpu-model", P5, {"query.csv": "query-a100-40gbx8.csv"}, {}, ["gpu_model"]),
    ("driver-not-loaded", P5, {}, {"states": {"nvidia-smi.rc": "9"}}, ["driver_loaded"]),
    ("driver-too-old-for-cuda", P5, {"query.csv": "query-h100x8-driver535.csv"},
     {"states": {"fm.version": "535.274.02"}}, ["driver_loaded"]),
    ("fabric-manager-inactive", P5, {}, {"states": {"nvidia-fabricmanager.service.state": "failed"}},
     ["fabric_manager"]),
    ("fabric-manager-version-mismatch", P5, {}, {"states": {"fm.version": "580.82.07"}}, ["fabric_manager"]),
    ("row-remap-pending", P5, {"row-remapper.txt": "row-remapper-pending.txt"}, {}, ["row_remap"]),
    ("row-remap-failure", P5, {"row-remapper.txt": "row-remapper-failure.txt"}, {}, ["row_remap"]),
    ("uncorrectable-ecc", P5, {"query.csv": "query-h100x8-ecc.csv"}, {}, ["uncorrectable_ecc"]),
    ("fatal-xid-79", P5, {"dmesg.txt": "dmesg-xid79.txt"}, {}, ["fatal_xid"]),
    ("efa-device-missing", P5, {}, {"rdma_count": 31}, ["rdma_devices"]),
    ("efa-provider-unusable", P5, {}, {"states": {"fi_info.rc": "61"}}, ["efa_provider"]),
    ("infiniband-link-missing", ND_H100, {}, {"rdma_count": 7}, ["rdma_devices"]),
    # No InfiniBand device at all: no port can be ACTIVE (a VM without the fabric reported "all ports ACTIVE").
    ("infiniband-absent", ND_H100, {}, {"rdma_count": 0}, ["rdma_devices", "rdma_ports_active"]),
    ("tcpx-nic-missing", A3_HIGH, {}, {"rdma_count": 3}, ["gpu_nics"]),
    # NCCL over TCP on every gVNIC NIC: a GPU NIC that did not come up is a slow node, not a healthy one.
    ("multi-nic-tcp-nic-missing", A3_MEGA_TCP, {}, {"rdma_count": 7}, ["gpu_nics"]),
    ("roce-nic-missing", A3_ULTRA, {"query.csv": H200_QUERY}, {"rdma_count": 7}, ["rdma_devices"]),
    ("dcgm-diag-fails", dict(P5, GPUFLEET_HEALTH_DCGM_DIAG="1"), {"dcgmi.txt": "dcgmi-fail.txt"},
     {"states": {"dcgmi.rc": "226"}}, ["dcgm_diag"]),
    ("nccl-allreduce-wrong-results", dict(P5, GPUFLEET_HEALTH_NCCL_ALLREDUCE="1"), {"nccl.txt": "nccl-bad.txt"}, {},
     ["nccl_allreduce"]),
    ("setup-step-failed", P5, {}, {"files": {"install-failed": "30-fabricmanager\n"}}, ["setup_steps"]),
]


@pytest.fixture(scope="module")
def results(health_script, tmp_path_factory):
    """Every case's run, executed concurrently once per module (each run is a few short processes)."""
    cases = {name: (env, outputs, extra) for name, env, outputs, extra in HEALTHY}
    cases.update({name: (env, dict(H100_OUTPUTS, **changed), extra) for name, env, changed, extra, _ in FAILURES})
    for env, _, extra in cases.values():
        count = extra.get("rdma_count", int(env["GPUFLEET_RDMA_DEVICES"]))
        shared_sysfs(health_script.parent.parent, env["GPUFLEET_FABRIC"], count)
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run_health, health_script, tmp_path_factory.mktemp(name), env, outputs, **extra)
                   for name, (env, outputs, extra) in cases.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", [h[0] for h in HEALTHY])
def test_healthy_fixtures_pass(results, name):
    done, report, reported, state = results[name]
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["healthy"] is True and failed_checks(report) == []
    assert reported == ""
    assert "gpufleet_node_healthy 1" in (state / "textfile" / "gpufleet_health.prom").read_text()


@pytest.mark.parametrize("name, expected", [(f[0], f[4]) for f in FAILURES])
def test_each_failure_is_detected_and_reported(results, name, expected):
    done, report, reported, state = results[name]
    assert done.returncode == 1, done.stdout + done.stderr
    assert report["healthy"] is False
    assert failed_checks(report) == expected
    assert reported.strip() == "unhealthy"
    assert "gpufleet_node_healthy 0" in (state / "textfile" / "gpufleet_health.prom").read_text()


def test_report_names_the_failure(results):
    _, report, _, _ = results["fatal-xid-79"]
    detail = next(c["detail"] for c in report["checks"] if c["check"] == "fatal_xid")
    assert detail == "XID 79 on PCI:0000:a8:00"


def test_an_unreadable_record_fails_its_check_instead_of_the_run(health_script, tmp_path):
    """An OSError other than "not found" (here: the step record is a directory) is a failed check, with a report."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "state").mkdir()
    (broken / "state" / "install-failed").mkdir()
    done, report, reported, state = _run_in(health_script, broken, P5)
    assert "Traceback" not in done.stderr, done.stderr
    assert failed_checks(report) == ["steps"] and "IsADirectoryError" in report["checks"][0]["detail"]
    assert (state / "textfile" / "gpufleet_health.prom").read_text().endswith("gpufleet_node_healthy 0\n")
    assert reported.strip() == "unhealthy"


def test_infiniband_port_down_fails_the_fabric(health_script, tmp_path):
    sysfs = tmp_path / "sys"
    fake_sysfs(sysfs, "infiniband", 8)
    (sysfs / "class/infiniband/mlx5_ib3/ports/1/state").write_text("1: DOWN\n")
    done, report, _, _ = _run_in(health_script, tmp_path, ND_H100, sysfs=sysfs)
    ports = [c for c in report["checks"] if c["check"] == "rdma_ports_active"]
    assert failed_checks(report) == ["rdma_ports_active"] and "mlx5_ib3" in ports[0]["detail"], report


def test_last_boots_metric_does_not_survive_a_check_that_cannot_finish(health_script, tmp_path):
    state = tmp_path / "state"
    (state / "textfile").mkdir(parents=True)
    (state / "textfile" / "gpufleet_health.prom").write_text("gpufleet_node_healthy 1\n")
    (state / "health.json").mkdir()  # the report cannot be written: the run dies
    done, _, _, _ = _run_in(health_script, tmp_path, P5, keep_state=True)
    assert done.returncode != 0
    assert not (state / "textfile" / "gpufleet_health.prom").exists()


def _run_in(health_script, base, env, sysfs=None, keep_state=False):
    """The check with H100 outputs and `base`/state as its state directory (which may already hold files)."""
    fake = base / "fake"
    fake.mkdir(exist_ok=True)
    for name, recorded in H100_OUTPUTS.items():
        shutil.copy(RECORDED / recorded, fake / name)
    for name, content in {"nvidia-fabricmanager.service.state": "active", "fm.version": "580.95.05"}.items():
        (fake / name).write_text(content + "\n")
    state = base / "state"
    state.mkdir(exist_ok=True)
    sysfs = sysfs or shared_sysfs(health_script.parent.parent, env["GPUFLEET_FABRIC"], int(env["GPUFLEET_RDMA_DEVICES"]))
    process_env = dict(os.environ, PATH=f"{FAKE_BIN}:{os.environ['PATH']}", FAKE_DIR=str(fake),
                       GPUFLEET_ENV_FILE=str(write_env(base / "node.env", env)), GPUFLEET_STATE_DIR=str(state),
                       GPUFLEET_SYSFS_ROOT=str(sysfs), GPUFLEET_HEALTH_REPORTER=str(FAKE_BIN / "report-health"))
    done = subprocess.run([sys.executable, str(health_script)], env=process_env, capture_output=True, text=True,
                          timeout=30)
    report = json.loads((state / "health.json").read_text()) if (state / "health.json").is_file() else {}
    reported = (fake / "reported").read_text() if (fake / "reported").exists() else ""
    return done, report, reported, state


def test_a_node_without_the_optional_checks_ships_and_runs_the_script_without_them(tmp_path):
    """A node gets only the `# only:` sections its spec turned on (AWS user data holds 16 KB): without them the
    script still runs the base checks, healthy on a healthy node, and has no code of the checks it was not given."""
    from gpufleet.cloud_init.parts import FILES_DIR, for_node, shipped
    relative = "usr/local/sbin/gpufleet-health"
    script = tmp_path / "node" / relative
    script.parent.mkdir(parents=True)
    script.write_text(shipped(for_node((FILES_DIR / relative).read_text(), {"aws"}), relative))
    for absent in ("def dcgm_diag", "def nccl_allreduce", "def shared_mount", "NCCL_BUSBW"):
        assert absent not in script.read_text(), absent
    done, report, reported, _ = run_health(script, tmp_path, P5, H100_OUTPUTS)
    assert done.returncode == 0 and report["healthy"] is True, done.stdout + done.stderr
    assert {c["check"] for c in report["checks"]} >= {"gpu_count", "driver_loaded", "fabric_manager", "rdma_devices"}


@pytest.mark.parametrize("dcgm, nccl, storage", [(True, False, False), (False, True, True), (True, True, True)])
def test_a_node_gets_each_optional_check_its_spec_turned_on(dcgm, nccl, storage):
    from dataclasses import replace

    from gpufleet.boot import boot_config
    from gpufleet.cloud_init.parts import FILES_DIR, for_node, node_sections

    from .conftest import aws_selection
    config = replace(boot_config(aws_selection(), "c"), health_dcgm_diag=dcgm, health_nccl_allreduce=nccl,
                     shared_storage=object() if storage else None)
    health = for_node((FILES_DIR / "usr/local/sbin/gpufleet-health").read_text(), node_sections(config))
    compile(health, "gpufleet-health", "exec")
    assert ("def dcgm_diag" in health, "def nccl_allreduce" in health, "def shared_mount" in health) == (
        dcgm, nccl, storage)
    assert "self.guarded(self.dcgm_diag)" in health if dcgm else "self.dcgm_diag" not in health
