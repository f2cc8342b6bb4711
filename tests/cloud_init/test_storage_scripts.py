"""The storage boot steps against fakes: the RAID0 scratch array (boot.d/05-local-nvme) and the shared
filesystem mount (boot.d/06-shared-storage), plus the acceptance check's mount test."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init.storage import SharedMount

from .conftest import FIXTURES, node_script, write_env

LIB = "usr/local/lib/gpufleet/"
STORAGE_BIN = FIXTURES / "storage-bin"
INSTANCE_STORE = "Amazon EC2 NVMe Instance Storage"


@pytest.fixture(scope="module")
def node(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("node")
    for relative in (LIB + "common.sh", LIB + "boot.d/05-local-nvme", LIB + "boot.d/06-shared-storage",
                     "usr/local/sbin/gpufleet-health"):
        node_script(root, relative)
    return root / "node"


class Machine:
    """A fake node: sysfs with NVMe disks, /dev, fstab and the fake tools' record of calls."""

    def __init__(self, root: Path):
        self.root = root
        self.fake, self.sysfs, self.dev = root / "fake", root / "sys", root / "dev"
        self.path = str(STORAGE_BIN)
        for folder in (self.fake, self.sysfs / "block", self.dev, root / "keyrings", root / "sources"):
            folder.mkdir(parents=True, exist_ok=True)

    def disk(self, name: str, model: str = INSTANCE_STORE, partitioned: bool = False, signature: bool = False):
        block = self.sysfs / "block" / name
        (block / "device").mkdir(parents=True)
        (block / "holders").mkdir()
        (block / "device" / "model").write_text(model.ljust(40) + "\n")
        if partitioned:
            (block / f"{name}p1").mkdir()
        if signature:
            (self.fake / f"signature-{name}").touch()

    def run(self, script: Path, env: dict) -> subprocess.CompletedProcess:
        values = {"GPUFLEET_CLOUD": "aws", "GPUFLEET_INSTANCE_TYPE": "p5.48xlarge", **env}
        process_env = dict(os.environ, PATH=f"{self.path}:{os.environ['PATH']}", FAKE_DIR=str(self.fake),
                           GPUFLEET_ENV_FILE=str(write_env(self.root / "node.env", values)),
                           GPUFLEET_LIB=str(script.parents[1]), GPUFLEET_STATE_DIR=str(self.root / "state"),
                           GPUFLEET_SYSFS_ROOT=str(self.sysfs), GPUFLEET_DEV_ROOT=str(self.dev),
                           GPUFLEET_FSTAB=str(self.root / "fstab"), GPUFLEET_KEYRINGS=str(self.root / "keyrings"),
                           GPUFLEET_APT_SOURCES=str(self.root / "sources"))
        return subprocess.run([str(script)], env=process_env, capture_output=True, text=True, timeout=20)

    def calls(self, tool: str) -> list[str]:
        path = self.fake / "calls"
        lines = path.read_text().splitlines() if path.exists() else []
        return [line[len(tool) + 1:] for line in lines if line.startswith(tool + " ")]

    def mounts(self) -> list[str]:
        path = self.fake / "mounts"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def machine(tmp_path) -> Machine:
    return Machine(tmp_path)


def nvme_env(machine: Machine, **extra) -> dict:
    return {"GPUFLEET_LOCAL_NVME": "1", "GPUFLEET_SCRATCH_PATH": str(machine.root / "scratch"),
            "GPUFLEET_SCRATCH_CONTAINER_ROOT": "0", **extra}


def test_raid0_takes_every_free_local_disk_and_no_network_disk(node, machine):
    for name in ("nvme1n1", "nvme2n1", "nvme3n1"):
        machine.disk(name)
    machine.disk("nvme0n1", model="Amazon Elastic Block Store")
    machine.disk("nvme4n1", partitioned=True)
    machine.disk("nvme5n1", signature=True)
    done = machine.run(node / LIB / "boot.d/05-local-nvme", nvme_env(machine))
    assert done.returncode == 0, done.stderr
    dev = machine.dev
    [create] = machine.calls("mdadm")[1:]
    assert create.split() == ["--create", f"{dev}/md/gpufleet-scratch", "--name=gpufleet-scratch", "--level=0",
                              "--raid-devices=3", "--run", "--force", f"{dev}/nvme1n1", f"{dev}/nvme2n1",
                              f"{dev}/nvme3n1"]
    assert len(machine.calls("mkfs.ext4")) == 1
    assert machine.mounts() == [str(machine.root / "scratch")]


def test_raid0_on_one_disk(node, machine):
    machine.disk("nvme1n1")
    done = machine.run(node / LIB / "boot.d/05-local-nvme", nvme_env(machine))
    assert done.returncode == 0, done.stderr
    assert "--raid-devices=1" in machine.calls("mdadm")[1].split()


def test_reboot_assembles_the_existing_array_without_formatting(node, machine):
    for name in ("nvme1n1", "nvme2n1"):
        machine.disk(name, signature=True)  # members carry the array's superblock
    (machine.fake / "superblocks").touch()
    (machine.fake / "fstype-gpufleet-scratch").write_text("ext4\n")
    done = machine.run(node / LIB / "boot.d/05-local-nvme", nvme_env(machine))
    assert done.returncode == 0, done.stderr
    assert [c.split()[0] for c in machine.calls("mdadm")] == ["--assemble"]
    assert machine.calls("mkfs.ext4") == []
    assert machine.mounts() == [str(machine.root / "scratch")]


def test_no_local_disks_is_skipped(node, machine):
    machine.disk("nvme0n1", model="Amazon Elastic Block Store")
    done = machine.run(node / LIB / "boot.d/05-local-nvme", nvme_env(machine))
    assert done.returncode == 0, done.stderr
    assert "no free local NVMe disks" in done.stderr
    assert [c.split()[0] for c in machine.calls("mdadm")] == ["--assemble"]
    assert machine.mounts() == []


def test_disabled_does_nothing(node, machine):
    machine.disk("nvme1n1")
    done = machine.run(node / LIB / "boot.d/05-local-nvme", {"GPUFLEET_LOCAL_NVME": "0"})
    assert done.returncode == 0 and not (machine.fake / "calls").exists()


@pytest.mark.parametrize(("cloud", "model"), [("gcp", "nvme_card"), ("azure", "Microsoft NVMe Direct Disk v2")])
def test_each_clouds_local_disks_are_found(node, machine, cloud, model):
    machine.disk("nvme0n1", model="nvme_card-pd" if cloud == "gcp" else "MSFT NVMe Accelerator v1.0")
    machine.disk("nvme1n1", model=model)
    done = machine.run(node / LIB / "boot.d/05-local-nvme", nvme_env(machine, GPUFLEET_CLOUD=cloud))
    assert done.returncode == 0, done.stderr
    assert machine.calls("mdadm")[1].split()[-1] == f"{machine.dev}/nvme1n1"


def test_container_data_root_moves_onto_the_array(node, machine):
    machine.disk("nvme1n1")
    docker_root = machine.root / "var-lib-docker"
    done = machine.run(node / LIB / "boot.d/05-local-nvme", nvme_env(
        machine, GPUFLEET_SCRATCH_CONTAINER_ROOT="1", GPUFLEET_CONTAINER_RUNTIME="docker",
        GPUFLEET_DOCKER_ROOT=str(docker_root)))
    assert done.returncode == 0, done.stderr
    assert f"--bind {machine.root}/scratch/var-lib-docker {docker_root}" in machine.calls("mount")
    assert machine.calls("systemctl") == ["stop docker.socket docker.service", "start docker.socket docker.service"]


def shared_env(machine: Machine, cloud: str = "aws", kind: str = "lustre",
               source: str = "fs-0abc.fsx.us-east-2.amazonaws.com@tcp:/abcdefgh") -> dict:
    mount = SharedMount(cloud, kind, str(machine.root / "shared"), source)
    return {"GPUFLEET_CLOUD": cloud, "GPUFLEET_SHARED_KIND": kind, "GPUFLEET_SHARED_SOURCE": source,
            "GPUFLEET_SHARED_MOUNT_PATH": mount.mount_path, "GPUFLEET_SHARED_FSTYPE": mount.fstype,
            "GPUFLEET_SHARED_OPTIONS": mount.options}


def test_lustre_client_for_the_running_kernel_is_installed_and_mounted_from_fstab(node, machine):
    (machine.root / "fstab").write_text("LABEL=cloudimg-rootfs / ext4 discard,errors=remount-ro 0 1\n")
    env = shared_env(machine)
    done = machine.run(node / LIB / "boot.d/06-shared-storage", env)
    assert done.returncode == 0, done.stderr
    assert any("install" in c and "lustre-client-modules-6.8.0-1015-aws" in c for c in machine.calls("apt-get"))
    source = (machine.root / "sources" / "fsx-lustre-client.list").read_text()
    assert "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu" in source and "signed-by=" in source
    fstab = (machine.root / "fstab").read_text().splitlines()
    assert fstab[0].startswith("LABEL=cloudimg-rootfs")
    assert fstab[1:] == ["# gpufleet: storage.shared", f"{env['GPUFLEET_SHARED_SOURCE']} {machine.root}/shared lustre "
                         f"{env['GPUFLEET_SHARED_OPTIONS']} 0 0"]
    assert "_netdev" in env["GPUFLEET_SHARED_OPTIONS"] and "flock" in env["GPUFLEET_SHARED_OPTIONS"]
    assert machine.calls("mount") == [f"{machine.root}/shared"]


def test_second_boot_keeps_one_fstab_line_and_skips_the_install(node, machine):
    env = shared_env(machine)
    assert machine.run(node / LIB / "boot.d/06-shared-storage", env).returncode == 0
    (machine.fake / "calls").unlink()
    (machine.fake / "mounts").unlink()
    done = machine.run(node / LIB / "boot.d/06-shared-storage", env)
    assert done.returncode == 0, done.stderr
    assert machine.calls("apt-get") == []
    assert (machine.root / "fstab").read_text().count("# gpufleet: storage.shared") == 1


def test_azure_installs_the_amlfs_metapackage_pinned_to_the_kernel(node, machine):
    done = machine.run(node / LIB / "boot.d/06-shared-storage", shared_env(machine, "azure", source="10.0.1.4@tcp:/lustrefs"))
    assert done.returncode == 0, done.stderr
    assert any(c.endswith("amlfs-lustre-client-2.15.7-33-gbe8e1e5=6.8.0-1015-aws") for c in machine.calls("apt-get"))


def test_missing_client_for_the_kernel_fails_the_step(node, machine, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text('#!/bin/bash\nexit 0\n')
    (bin_dir / "apt-get").chmod(0o755)
    env = shared_env(machine, "gcp", source="10.1.0.5@tcp:/lustrefs")
    machine.path = f"{bin_dir}:{STORAGE_BIN}"  # apt-get installs nothing: no package for this kernel
    done = machine.run(node / LIB / "boot.d/06-shared-storage", env)
    assert done.returncode == 1
    assert "no Lustre client modules for kernel" in done.stderr


def test_nfs_mounts_with_nfs4_and_the_documented_options(node, machine):
    env = shared_env(machine, "aws", "nfs", "fs-0abc.efs.us-east-2.amazonaws.com:/")
    done = machine.run(node / LIB / "boot.d/06-shared-storage", env)
    assert done.returncode == 0, done.stderr
    line = (machine.root / "fstab").read_text().splitlines()[-1].split()
    assert line[2] == "nfs4" and line[3].startswith("nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600")
    assert "_netdev" in line[3]


def health(node: Path, machine: Machine, mounts: str) -> tuple[int, dict]:
    (machine.root / "mounts").write_text(mounts)
    (machine.root / "shared").mkdir(exist_ok=True)
    env = {**shared_env(machine), "GPUFLEET_MOUNTS_FILE": str(machine.root / "mounts"), "GPUFLEET_GPUS": "0",
           "GPUFLEET_HEALTH_REPORTER": "/bin/true"}
    write_env(machine.root / "node.env", env)
    done = subprocess.run([str(node / "usr/local/sbin/gpufleet-health")], capture_output=True, text=True, timeout=20,
                          env=dict(os.environ, PATH=f"{STORAGE_BIN}:{os.environ['PATH']}", FAKE_DIR=str(machine.fake),
                                   GPUFLEET_ENV_FILE=str(machine.root / "node.env"),
                                   GPUFLEET_STATE_DIR=str(machine.root / "state")))
    report = json.loads((machine.root / "state" / "health.json").read_text())
    return done.returncode, next(c for c in report["checks"] if c["check"] == "shared_mount")


def test_health_fails_when_the_shared_filesystem_is_not_mounted(node, machine):
    code, check = health(node, machine, "/dev/root / ext4 rw 0 0\n")
    assert code == 1 and check["ok"] is False and "no lustre filesystem mounted" in check["detail"]


def test_health_passes_the_mount_check_when_mounted(node, machine):
    _, check = health(node, machine, f"10.0.0.5@tcp:/fs {machine.root}/shared lustre rw,flock 0 0\n")
    assert check["ok"] is True
