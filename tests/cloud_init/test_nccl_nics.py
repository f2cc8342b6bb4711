"""boot.d/07-nccl-nics on a fake sysfs: multi-NIC TCP nodes (GCP A3 High / A3 Mega without GPUDirect) get the gVNIC
interfaces that are up as NCCL_SOCKET_IFNAME in /etc/nccl.conf and the job environment, whatever the image names
them; a user's own NCCL_SOCKET_IFNAME is never replaced."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init import BootConfig
from gpufleet.cloud_init.env import node_env_items, render_env_file, render_job_env, render_nccl_conf

from .conftest import node_script

LIB = "usr/local/lib/gpufleet/"
CATALOG_NICS = ("enp6s0", "enp7s0", "enp13s0", "enp14s0", "enp134s0", "enp135s0", "enp141s0", "enp142s0")


def a3_mega(**changes) -> BootConfig:
    values = dict(cloud="gcp", cluster_name="train", instance_type="a3-megagpu-8g", image_kind="driver-ready",
                  gpu_model="H100", gpus=8, gpu_memory_gib=80, gpu_architecture="hopper", driver_branch="580",
                  driver_flavor="open", cuda="13.0", min_driver_branch=580, fabric="tcp-multinic", rdma_devices=8,
                  host_nics=("enp0s12",), gpu_nics=CATALOG_NICS)
    return BootConfig(**{**values, **changes})


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("node")
    node_script(root, LIB + "common.sh")
    return node_script(root, LIB + "boot.d/07-nccl-nics")


def sysfs_with(root: Path, nics: dict[str, tuple[str, str]]) -> Path:
    """/sys/class/net with {name: (driver, operstate)}; driver "" is a virtual interface (no device)."""
    sysfs = root / "sys"
    for name, (driver, state) in nics.items():
        dev = sysfs / "class" / "net" / name
        dev.mkdir(parents=True)
        (dev / "operstate").write_text(state + "\n")
        if driver:
            (sysfs / "bus" / "drivers" / driver).mkdir(parents=True, exist_ok=True)
            (dev / "device").mkdir()
            (dev / "device" / "driver").symlink_to(sysfs / "bus" / "drivers" / driver)
    return sysfs


def boot(script: Path, root: Path, config: BootConfig, sysfs: Path) -> subprocess.CompletedProcess:
    """Writes the node's rendered node.env, nccl.conf and job.env under root, then runs the step."""
    (root / "node.env").write_text(render_env_file(node_env_items(config, []), "test"))
    (root / "nccl.conf").write_text(render_nccl_conf(config))
    (root / "job.env").write_text(render_job_env(config))
    env = dict(os.environ, GPUFLEET_ENV_FILE=str(root / "node.env"), GPUFLEET_LIB=str(script.parents[1]),
               GPUFLEET_SYSFS_ROOT=str(sysfs), GPUFLEET_NCCL_CONF=str(root / "nccl.conf"),
               GPUFLEET_JOB_ENV=str(root / "job.env"), GPUFLEET_NIC_WAIT_SECONDS="0")
    return subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=30)


def job_value(root: Path, name: str) -> str:
    """What a login shell gets from the job environment (sourced by sh, as /etc/profile.d does)."""
    done = subprocess.run(["sh", "-c", f'set -a; . "$1"; printf %s "${name}"', "sh", str(root / "job.env")],
                          capture_output=True, text=True, check=True)
    return done.stdout


def conf_value(root: Path, name: str) -> list[str]:
    return [line.split("=", 1)[1] for line in (root / "nccl.conf").read_text().splitlines()
            if line.startswith(name + "=")]


def test_the_gvnic_interfaces_that_are_up_replace_the_catalog_names(script, tmp_path):
    """COS-style names (eth0..eth8): the catalog's enp* names would match nothing and NCCL would fail."""
    nics = {"lo": ("", "unknown"), "docker0": ("", "down"), "ens4": ("virtio_net", "up"),
            **{f"eth{i}": ("gve", "up") for i in range(9)}, "eth9": ("gve", "down")}
    done = boot(script, tmp_path, a3_mega(), sysfs_with(tmp_path, nics))
    assert done.returncode == 0, done.stderr
    wanted = "=" + ",".join(f"eth{i}" for i in range(9))
    assert conf_value(tmp_path, "NCCL_SOCKET_IFNAME") == [wanted]
    assert job_value(tmp_path, "NCCL_SOCKET_IFNAME") == wanted
    assert job_value(tmp_path, "NCCL_NSOCKS_PERTHREAD") == "4" and job_value(tmp_path, "NCCL_SOCKET_NTHREADS") == "4"
    assert "9 gVNIC interface(s)" in done.stderr


def test_fewer_nics_than_declared_are_used_and_logged(script, tmp_path):
    nics = {name: ("gve", "up") for name in ("enp0s12", *CATALOG_NICS[:7])}
    done = boot(script, tmp_path, a3_mega(), sysfs_with(tmp_path, nics))
    assert done.returncode == 0, done.stderr
    assert job_value(tmp_path, "NCCL_SOCKET_IFNAME") == "=" + ",".join(sorted(nics))
    assert "found 8 gVNIC interface(s) up, expected 9" in done.stderr


def test_no_gvnic_keeps_the_planned_names(script, tmp_path):
    done = boot(script, tmp_path, a3_mega(), sysfs_with(tmp_path, {"ens4": ("virtio_net", "up")}))
    assert done.returncode == 0, done.stderr
    assert job_value(tmp_path, "NCCL_SOCKET_IFNAME") == "=" + ",".join(("enp0s12", *CATALOG_NICS))


def test_the_users_own_interfaces_are_never_replaced(script, tmp_path):
    config = a3_mega(nccl_env=(("NCCL_SOCKET_IFNAME", "=eth1,eth2"),))
    before = render_job_env(config), render_nccl_conf(config)
    done = boot(script, tmp_path, config, sysfs_with(tmp_path, {f"eth{i}": ("gve", "up") for i in range(9)}))
    assert done.returncode == 0, done.stderr
    assert ((tmp_path / "job.env").read_text(), (tmp_path / "nccl.conf").read_text()) == before
    assert job_value(tmp_path, "NCCL_SOCKET_IFNAME") == "=eth1,eth2"


def test_only_multi_nic_tcp_nodes_discover_nics():
    """Other fabrics carry neither the step's trigger nor its file (their user data stays as it was)."""
    from gpufleet.cloud_init.parts import selected_paths
    for fabric in ("tcp", "roce", "efa", "infiniband"):
        config = a3_mega(fabric=fabric, rdma_devices=0)
        assert "GPUFLEET_NCCL_DISCOVER_NICS" not in dict(node_env_items(config, []))
        assert LIB + "boot.d/07-nccl-nics" not in selected_paths(config)
    assert dict(node_env_items(a3_mega(), []))["GPUFLEET_NCCL_DISCOVER_NICS"] == "9"
    assert LIB + "boot.d/07-nccl-nics" in selected_paths(a3_mega())
