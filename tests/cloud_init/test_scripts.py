"""Node scripts run against fakes: gpufleet-run, the health reporter for each cloud, driver verification,
the job slice properties and MIG at boot."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import FAKE_BIN, FIXTURES, node_script, write_env
from .metadata_servers import MetadataServer

LIB = "usr/local/lib/gpufleet/"


@pytest.fixture(scope="module")
def node(tmp_path_factory) -> Path:
    """The shipped copies of the node scripts under one root (scripts find common.sh through GPUFLEET_LIB)."""
    root = tmp_path_factory.mktemp("node")
    for relative in ("usr/local/bin/gpufleet-run", "usr/local/sbin/gpufleet-report-health", LIB + "common.sh",
                     "usr/local/sbin/gpufleet-boot", LIB + "boot.d/10-driver", LIB + "mps-thread-limit",
                     LIB + "install.d/20-driver", LIB + "install.d/30-fabricmanager", LIB + "boot.d/50-slice",
                     LIB + "boot.d/30-mig", "etc/profile.d/gpufleet-job-env.sh"):
        node_script(root, relative)
    return root / "node"


def run(script: Path, tmp_path: Path, node_env: dict, *args, extra_env=None, fake_bin: Path = FAKE_BIN):
    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    env = dict(os.environ, PATH=f"{fake_bin}:{os.environ['PATH']}", FAKE_DIR=str(fake),
               GPUFLEET_ENV_FILE=str(write_env(tmp_path / "node.env", node_env)),
               GPUFLEET_LIB=_lib(script),
               GPUFLEET_STATE_DIR=str(tmp_path / "state"), GPUFLEET_RUN_DIR=str(tmp_path / "run"))
    env.update(extra_env or {})
    done = subprocess.run([str(script), *args], env=env, capture_output=True, text=True, timeout=20)
    return done, fake


def _lib(script: Path) -> str:
    root = next(p for p in script.parents if p.name == "node")
    return str(root / LIB)


def test_gpufleet_run_starts_the_job_in_the_slice_with_the_job_environment(node, tmp_path):
    job_env = write_env(tmp_path / "job.env", {"NCCL_SOCKET_IFNAME": "^docker,lo,veth", "FI_EFA_USE_HUGE_PAGE": "0",
                                               "CUDA_MPS_PIPE_DIRECTORY": "/run/nvidia-mps"})
    profile = tmp_path / "profile.sh"
    profile.write_text(f"set -a\n. {job_env}\nset +a\n")
    done, fake = run(node / "usr/local/bin/gpufleet-run", tmp_path, {}, "--name", "train-1", "--", "python",
                     "train.py", "--epochs", "3", extra_env={"GPUFLEET_JOB_PROFILE": str(profile),
                                                             "SUDO_UID": "1000", "SUDO_GID": "1000"})
    assert done.returncode == 0, done.stderr
    args = (fake / "systemd-run.args").read_text().splitlines()
    assert args[:6] == ["--slice=gpufleet-jobs.slice", "--unit=train-1", "--collect", "--same-dir", "--quiet",
                        "--uid=1000"]
    assert "--setenv=NCCL_SOCKET_IFNAME=^docker,lo,veth" in args and "--setenv=FI_EFA_USE_HUGE_PAGE=0" in args
    assert "--setenv=CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps" in args
    assert "--wait" in args and "--pipe" in args
    assert args[-5:] == ["--", "python", "train.py", "--epochs", "3"]


def test_gpufleet_run_without_a_command_prints_usage(node, tmp_path):
    done, _ = run(node / "usr/local/bin/gpufleet-run", tmp_path, {})
    assert done.returncode == 2 and "usage: gpufleet-run" in done.stderr


def test_an_unhealthy_dlami_node_is_reported_through_the_aws_cli(node, tmp_path):
    with MetadataServer("aws") as server:
        done, fake = run(node / "usr/local/sbin/gpufleet-report-health", tmp_path,
                         {"GPUFLEET_CLOUD": "aws", "GPUFLEET_METADATA_URL": server.url}, "unhealthy",
                         extra_env={"GPUFLEET_AWS_API": str(tmp_path / "not-installed")})
    assert done.returncode == 0, done.stderr
    assert ("aws autoscaling set-instance-health --region us-east-2 --instance-id i-0123456789abcdef0 "
            "--health-status Unhealthy --no-should-respect-grace-period") in (fake / "cli").read_text().splitlines()
    assert "PUT /latest/api/token" in server.requests  # IMDSv2


@pytest.mark.parametrize("cloud, expected", [
    ("aws", "gpufleet-aws SetInstanceHealth InstanceId={instance-id} HealthStatus=Unhealthy "
            "ShouldRespectGracePeriod=false"),
    ("gcp", "gcloud compute instances add-labels gpufleet-test-node-1 --zone us-central1-a "
            "--labels gpufleet-health=unhealthy"),
])
def test_unhealthy_node_is_reported_to_its_cloud(node, tmp_path, cloud, expected):
    with MetadataServer(cloud) as server:
        done, fake = run(node / "usr/local/sbin/gpufleet-report-health", tmp_path,
                         {"GPUFLEET_CLOUD": cloud, "GPUFLEET_METADATA_URL": server.url}, "unhealthy",
                         extra_env={"GPUFLEET_AWS_API": "gpufleet-aws"})
    assert done.returncode == 0, done.stderr
    assert expected in (fake / "cli").read_text().splitlines()


def test_azure_unhealthy_state_stays_on_the_node(node, tmp_path):
    """No Azure call can succeed (no role on the identity, Uniform instances take no tags): log it, call nothing."""
    with MetadataServer("azure") as server:
        done, fake = run(node / "usr/local/sbin/gpufleet-report-health", tmp_path,
                         {"GPUFLEET_CLOUD": "azure", "GPUFLEET_METADATA_URL": server.url}, "unhealthy")
    assert done.returncode == 0, done.stderr
    assert "not reported to Azure; it is published on this node only" in done.stderr
    assert not (fake / "cli").exists() and server.requests == []


def test_reporter_fails_cleanly_without_metadata(node, tmp_path):
    done, fake = run(node / "usr/local/sbin/gpufleet-report-health", tmp_path,
                     {"GPUFLEET_CLOUD": "aws", "GPUFLEET_METADATA_URL": "http://127.0.0.1:9"}, "unhealthy")
    assert done.returncode != 0 and not (fake / "cli").exists()


@pytest.mark.parametrize("query, expected_rc, message", [
    ("query-h100x8.csv", 0, "NVIDIA driver 580.95.05 found"),
    ("query-h100x8-driver535.csv", 1, "older than branch 580, which CUDA 13.0 needs"),
])
def test_driver_ready_image_only_verifies_the_driver(node, tmp_path, query, expected_rc, message):
    (tmp_path / "fake").mkdir()
    shutil.copy(FIXTURES / "health" / query, tmp_path / "fake" / "query.csv")
    env = {"GPUFLEET_IMAGE_KIND": "driver-ready", "GPUFLEET_DRIVER_BRANCH": "580", "GPUFLEET_CUDA": "13.0",
           "GPUFLEET_MIN_DRIVER_BRANCH": "580"}
    if Path("/sys/module/nvidia/version").exists():
        pytest.skip("this host has an NVIDIA driver loaded; the fixture cannot stand in for it")
    done, _ = run(node / LIB / "install.d/20-driver", tmp_path, env)
    assert done.returncode == expected_rc, done.stderr
    assert message in done.stderr


def test_driver_ready_image_without_a_loaded_driver_fails_with_a_message(node, tmp_path):
    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "nvidia-smi.rc").write_text("9")  # nvidia-smi prints its failure on stdout
    if Path("/sys/module/nvidia/version").exists():
        pytest.skip("this host has an NVIDIA driver loaded; the fixture cannot stand in for it")
    done, _ = run(node / LIB / "install.d/20-driver", tmp_path, {"GPUFLEET_IMAGE_KIND": "driver-ready",
                                                                 "GPUFLEET_MIN_DRIVER_BRANCH": "580"})
    assert done.returncode == 1 and "driver-ready image, but no NVIDIA driver is loaded" in done.stderr


STOCK = {"GPUFLEET_IMAGE_KIND": "ubuntu-24.04", "GPUFLEET_DRIVER_BRANCH": "580", "GPUFLEET_CUDA": "13.0",
         "GPUFLEET_MIN_DRIVER_BRANCH": "580", "GPUFLEET_NVLSM": "0"}


@pytest.mark.parametrize("flavor, open_suffix", [("open", "-open"), ("proprietary", "")])
def test_stock_ubuntu_installs_the_signed_server_driver_and_asks_for_one_reboot(node, tmp_path, flavor, open_suffix):
    done, fake = run(node / LIB / "install.d/20-driver", tmp_path, dict(STOCK, GPUFLEET_DRIVER_FLAVOR=flavor))
    assert done.returncode == 0, done.stderr
    calls = (fake / "calls").read_text().splitlines()
    installs = [c.split(" install ", 1)[1] for c in calls if c.startswith("apt-get") and " install " in c]
    packages = [p for line in installs for p in line.split() if not p.startswith("-") and "::" not in p]
    assert {f"nvidia-headless-no-dkms-580-server{open_suffix}", "nvidia-utils-580-server",
            "nvidia-compute-utils-580-server", f"linux-modules-nvidia-580-server{open_suffix}-6.8.0-1015-aws",
            f"linux-modules-nvidia-580-server{open_suffix}-aws"} <= set(packages)
    assert not [p for p in packages if "dkms" in p and "no-dkms" not in p]  # Canonical-signed modules, no DKMS
    assert f"apt-mark hold nvidia-headless-no-dkms-580-server{open_suffix} nvidia-utils-580-server " \
           "nvidia-compute-utils-580-server" in calls
    assert "update-initramfs -u" in calls
    assert (tmp_path / "run" / "reboot-required").exists()  # cloud-init's power_state reboots on this marker


def _without(tmp_path: Path, *names: str) -> Path:
    """A fake bin directory like FAKE_BIN without `names` (e.g. Fabric Manager not installed yet)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in FAKE_BIN.iterdir():
        if tool.name not in names:
            (folder / tool.name).symlink_to(tool)
    return folder


MADISON = (" nvidia-fabricmanager-580 | 580.105.08-0ubuntu0.24.04.1 | http://archive.ubuntu.com/ubuntu noble-updates/"
           "multiverse amd64 Packages\n nvidia-fabricmanager-580 | 580.95.05-0ubuntu0.24.04.2 | http://archive.ubuntu"
           ".com/ubuntu noble-security/multiverse amd64 Packages\n")


def test_fabric_manager_is_installed_at_exactly_the_driver_version(node, tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "nvidia-smi.rc").write_text("9")  # stock Ubuntu before the reboot: the module is not loaded yet
    (fake / "dpkg.version").write_text("580.95.05-0ubuntu0.24.04.2\n")
    (fake / "madison.txt").write_text(MADISON)
    done, fake = run(node / LIB / "install.d/30-fabricmanager", tmp_path, STOCK,
                     fake_bin=_without(tmp_path, "nv-fabricmanager"))
    assert done.returncode == 0, done.stderr
    calls = (fake / "calls").read_text().splitlines()
    assert any(c.startswith("apt-get") and c.endswith(" nvidia-fabricmanager-580=580.95.05-0ubuntu0.24.04.2")
               for c in calls), calls
    assert "apt-mark hold nvidia-fabricmanager-580" in calls
    assert "systemctl enable nvidia-fabricmanager.service" in calls


def test_fabric_manager_is_not_installed_at_another_version(node, tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "nvidia-smi.rc").write_text("9")
    (fake / "dpkg.version").write_text("580.82.07-0ubuntu1\n")
    (fake / "madison.txt").write_text(MADISON)
    done, fake = run(node / LIB / "install.d/30-fabricmanager", tmp_path, STOCK,
                     fake_bin=_without(tmp_path, "nv-fabricmanager"))
    assert done.returncode == 1 and "no nvidia-fabricmanager-580 package at driver version 580.82.07" in done.stderr
    assert not [c for c in (fake / "calls").read_text().splitlines() if "fabricmanager-580=" in c]


def test_job_slice_gets_the_spec_limits_as_runtime_properties(node, tmp_path):
    env = {"GPUFLEET_SLICE_MEMORY_MAX_PERCENT": "85", "GPUFLEET_SLICE_CPU_QUOTA_PERCENT": "4800",
           "GPUFLEET_SLICE_ALLOWED_CPUS": "0-47"}
    (tmp_path / "cgroup").mkdir()
    (tmp_path / "cgroup" / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    done, fake = run(node / LIB / "boot.d/50-slice", tmp_path, env,
                     extra_env={"GPUFLEET_CGROUP_ROOT": str(tmp_path / "cgroup")})
    assert done.returncode == 0, done.stderr
    call = (fake / "calls").read_text().strip()
    assert call.startswith("systemctl set-property --runtime gpufleet-jobs.slice MemoryMax=85% CPUQuota=4800% "
                           "AllowedCPUs=0-47")


def test_job_slice_refuses_a_cgroup_v1_hierarchy(node, tmp_path):
    (tmp_path / "cgroup" / "memory").mkdir(parents=True)  # v1: one directory per controller, no cgroup.controllers
    done, fake = run(node / LIB / "boot.d/50-slice", tmp_path, {},
                     extra_env={"GPUFLEET_CGROUP_ROOT": str(tmp_path / "cgroup")})
    assert done.returncode == 1 and "needs cgroup v2" in done.stderr and not (fake / "calls").exists()


def test_mig_step_does_nothing_without_profiles(node, tmp_path):
    done, fake = run(node / LIB / "boot.d/30-mig", tmp_path, {"GPUFLEET_MIG_PROFILES": ""})
    assert done.returncode == 0 and not (fake / "calls").exists()


def _mig_fake(tmp_path: Path, mode: str, immediate: bool) -> None:
    fake = tmp_path / "fake"
    fake.mkdir(exist_ok=True)
    shutil.copy(FIXTURES / "health" / "query-h100x8.csv", fake / "query.csv")
    (fake / "mig.mode").write_text(mode + "\n")
    if immediate:
        (fake / "mig.immediate").write_text("")


MIG_ENV = {"GPUFLEET_MIG_PROFILES": "3g.40gb,3g.40gb"}


def test_mig_profiles_are_created_on_every_gpu(node, tmp_path):
    _mig_fake(tmp_path, "Disabled", immediate=True)
    done, fake = run(node / LIB / "boot.d/30-mig", tmp_path, MIG_ENV)
    assert done.returncode == 0, done.stderr
    calls = (fake / "calls").read_text().splitlines()
    assert [c for c in calls if "-cgi" in c] == [f"nvidia-smi mig -i {i} -cgi 3g.40gb,3g.40gb -C" for i in range(8)]
    assert "systemctl stop nvidia-dcgm.service" in calls and calls[-1] == "systemctl start nvidia-dcgm.service"


def test_mig_pending_reboots_once_then_fails(node, tmp_path):
    _mig_fake(tmp_path, "Disabled", immediate=False)
    done, fake = run(node / LIB / "boot.d/30-mig", tmp_path, MIG_ENV)
    assert done.returncode == 0, done.stderr
    assert "systemctl reboot" in (fake / "calls").read_text().splitlines()
    assert (tmp_path / "state" / "mig-reboot-done").exists()
    done, fake = run(node / LIB / "boot.d/30-mig", tmp_path, MIG_ENV)
    assert done.returncode == 1 and "still pending after a reboot" in done.stderr
    assert (fake / "calls").read_text().splitlines().count("systemctl reboot") == 1


def test_boot_runs_every_step_and_records_the_failed_ones(node, tmp_path):
    """A failed step is recorded for the acceptance check (setup_steps) and does not stop the steps after it."""
    lib = tmp_path / "lib"
    (lib / "boot.d").mkdir(parents=True)
    shutil.copy(node / LIB / "common.sh", lib / "common.sh")
    done_dir = tmp_path / "ran"
    done_dir.mkdir()
    for name, code in (("10-first", 0), ("20-broken", 3), ("30-after", 0)):
        step = lib / "boot.d" / name
        step.write_text(f'#!/bin/sh\ntouch "{done_dir}/{name}"\nexit {code}\n')
        step.chmod(0o755)
    (lib / "boot.d" / "40-not-executable").write_text("#!/bin/sh\nexit 1\n")
    done, _ = run(node / "usr/local/sbin/gpufleet-boot", tmp_path, {}, extra_env={"GPUFLEET_LIB": str(lib)})
    assert done.returncode == 1
    assert sorted(p.name for p in done_dir.iterdir()) == ["10-first", "20-broken", "30-after"]
    assert (tmp_path / "state" / "boot-failed").read_text() == "20-broken\n"
    assert "step 20-broken: FAILED (exit 3)" in done.stderr


@pytest.mark.parametrize("answers, gpu_on_bus, expected_rc, message", [
    (True, True, 0, "8 GPU(s)"), (False, True, 1, "nvidia-smi did not answer within 1s"),
    (False, False, 1, "no NVIDIA device on the PCI bus; not waiting")])
def test_boot_waits_for_the_driver(node, tmp_path, answers, gpu_on_bus, expected_rc, message):
    fake = tmp_path / "fake"
    fake.mkdir()
    shutil.copy(FIXTURES / "health" / "query-h100x8.csv", fake / "query.csv")
    if not answers:
        (fake / "nvidia-smi.rc").write_text("9")
    sysfs = tmp_path / "sys"
    for address, vendor in (("0000:00:01.0", "0x8086"), ("0000:53:00.0", "0x10de" if gpu_on_bus else "0x1d0f")):
        (sysfs / "bus/pci/devices" / address).mkdir(parents=True)
        (sysfs / "bus/pci/devices" / address / "vendor").write_text(vendor + "\n")
    done, _ = run(node / LIB / "boot.d/10-driver", tmp_path, {"GPUFLEET_DRIVER_WAIT_SECONDS": "1"},
                  extra_env={"GPUFLEET_SYSFS_ROOT": str(sysfs)})
    assert done.returncode == expected_rc and message in done.stderr, done.stderr


@pytest.mark.parametrize("args, percentage, expected", [((), "40", "set_default_active_thread_percentage 40"),
                                                        ((), "", ""), (("quit",), "40", "quit")])
def test_mps_control_gets_the_thread_limit_or_quit(node, tmp_path, args, percentage, expected):
    bin_dir = _without(tmp_path, "")
    control = bin_dir / "nvidia-cuda-mps-control"
    control.write_text('#!/bin/sh\ncat >>"$FAKE_DIR/mps-control"\n')
    control.chmod(0o755)
    # The unit passes node.env through EnvironmentFile=, so the value arrives in the environment.
    done, fake = run(node / LIB / "mps-thread-limit", tmp_path, {}, *args, fake_bin=bin_dir,
                     extra_env={"GPUFLEET_MPS_ACTIVE_THREAD_PERCENTAGE": percentage})
    assert done.returncode == 0, done.stderr
    sent = (fake / "mps-control").read_text().strip() if (fake / "mps-control").exists() else ""
    assert sent == expected
