"""`sync` and `verify` end to end against a real sshd on 127.0.0.1, reached only through a ProxyCommand that plays
the cloud tunnel's role (marker `migrate`). The node hostnames do not resolve: every byte goes through tunnel.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from gpufleet.migrate.match import MIGRATION_KEY
from gpufleet.plan.cli import main
from tests.migrate.fake_clis import fake_clis
from tests.migrate.fixtures import Sshd, build_wheel, editable_project, make_venv, pip_install, start_sshd
from tests.processes import left_running

pytestmark = pytest.mark.migrate
BIG_FILE_BYTES = 6 * 1024 * 1024


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    server.process.terminate()
    server.process.wait(timeout=10)


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> dict:
    """A captured workload (a venv with a local-version wheel and an editable project, a data folder) and a stack
    file recording its manifest."""
    root = tmp_path_factory.mktemp("local")
    wheels = root / "wheels"
    build_wheel(wheels, "torch", "2.1.0+cu121")
    build_wheel(wheels, "numpy", "1.26.4")
    python = make_venv(root / "venv")
    pip_install(python, "--find-links", str(wheels), "torch==2.1.0+cu121", "numpy==1.26.4")
    pip_install(python, "-e", str(editable_project(root / "project")))
    data = root / "dataset"
    (data / "shards").mkdir(parents=True)
    (data / "shards" / "big.bin").write_bytes(os.urandom(BIG_FILE_BYTES))
    (data / "labels.csv").write_text("id,label\n1,cat\n")
    (data / ".gitignore").write_text("*.log\n")
    (data / "debug.log").write_text("not for the cluster\n")
    manifest = root / "manifest.json"
    assert subprocess.run([sys.executable, "-m", "gpufleet.plan.cli", "migrate", "capture", "--python", str(python),
                           "--data", str(data), "--out", str(manifest)], capture_output=True, env=_no_gpu_env(root)
                          ).returncode == 0
    return {"root": root, "wheels": wheels, "manifest": manifest, "data": data,
            "stack": _stack_file(root, manifest, shared=False), "shared_stack": _stack_file(root, manifest, shared=True)}


def _no_gpu_env(root: Path) -> dict:
    (root / "bin").mkdir(exist_ok=True)
    return {**os.environ, "PATH": f"{root / 'bin'}:/usr/bin:/bin"}


def _stack_file(root: Path, manifest: Path, shared: bool) -> Path:
    import yaml

    cluster = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 2,
               "accelerator": {"gpu": "T4", "gpus_per_node": 1}}
    if shared:
        cluster["storage"] = {"shared": {"kind": "nfs", "mount_path": "/shared"}}
    path = root / f"Pulumi.migrate-{'shared' if shared else 'nodes'}.yaml"
    path.write_text(yaml.safe_dump({"config": {"gpufleet:cluster": cluster,
                                               MIGRATION_KEY: {"manifest": str(manifest)}}}))
    return path


def node_venv(folder: Path, workload: dict, dest: Path, leave_out: str | None = None) -> Path:
    """The node's interpreter, installed as the README says, from the synced requirements.txt in the synced folder
    (the test's wheel folder plays the package index; `leave_out` drops one requirement)."""
    python = make_venv(folder)
    lines = (dest / ".gpufleet-migrate" / "requirements.txt").read_text().splitlines()
    kept = folder.parent / f"{folder.name}-requirements.txt"
    kept.write_text("".join(f"{line}\n" for line in lines if not (leave_out and line.startswith(leave_out))))
    pip_install(python, "--find-links", str(workload["wheels"]), "-r", str(kept), cwd=dest)
    return python


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpufleet.plan.cli", "migrate", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


def sync_args(workload: dict, sshd: Sshd, dest: Path, *hosts: str, stack: str = "stack") -> list[str]:
    return [str(workload[stack]), *[arg for host in hosts for arg in ("--host", host)], "--to", str(dest),
            *sshd.ssh_arguments()]


def test_copy_then_verify_through_the_tunnel(workload, sshd, tmp_path):
    dest = tmp_path / "node" / "workload"
    done = cli("sync", *sync_args(workload, sshd, dest, "i-0aaaaaaaaaaaaaaa1"))
    assert done.returncode == 0, done.stderr + done.stdout
    assert (dest / "dataset" / "shards" / "big.bin").read_bytes() == (workload["data"] / "shards" / "big.bin").read_bytes()
    assert not (dest / "dataset" / "debug.log").exists()  # git-ignored
    assert (dest / "src" / "project" / "demo_editable" / "__init__.py").is_file()  # editable source synced
    requirements = (dest / ".gpufleet-migrate" / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cu121" in requirements
    assert "torch==2.1.0" in requirements and "-e ./src/project" in requirements
    assert sshd.tunnelled_hosts() and set(sshd.tunnelled_hosts()) == {"i-0aaaaaaaaaaaaaaa1"}
    python = node_venv(tmp_path / "node-venv", workload, dest)
    verified = cli("verify", *sync_args(workload, sshd, dest, "i-0aaaaaaaaaaaaaaa1"), "--python", str(python),
                   "--test", "test -f dataset/labels.csv && python3 -c 'print(1)'")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verify: no differences" in verified.stdout
    assert "4 file(s) match" not in verified.stdout and "3 file(s) match their SHA-256" in verified.stdout


def test_an_interrupted_copy_resumes(workload, sshd, tmp_path):
    dest = tmp_path / "node" / "workload"
    far = dest / "dataset" / "shards" / "big.bin"
    slow = subprocess.Popen([sys.executable, "-m", "gpufleet.plan.cli", "migrate", "sync",
                             *sync_args(workload, sshd, dest, "i-0bbbbbbbbbbbbbbb2"), "--bwlimit", "512"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_interruptible)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _partial_bytes(far.parent):
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(slow.pid, signal.SIGINT)  # what Ctrl-C does to the whole command
    out, err = slow.communicate(timeout=30)
    assert slow.returncode == 130 and "interrupted; rsync kept the partial files" in out, out + err
    assert "Traceback" not in err
    kept = far.stat().st_size if far.exists() else 0
    assert 0 < kept < BIG_FILE_BYTES, "rsync --partial should keep the part it copied"
    resumed = cli("sync", *sync_args(workload, sshd, dest, "i-0bbbbbbbbbbbbbbb2"))
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert far.read_bytes() == (workload["data"] / "shards" / "big.bin").read_bytes()


def _interruptible() -> None:
    """Ctrl-C's SIGINT reaches the command as it does from a terminal, even where the suite was started in the
    background by a shell without job control, which leaves SIGINT ignored in every process it starts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _partial_bytes(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def test_verify_reports_a_changed_byte_a_missing_package_and_a_failing_test(workload, sshd, tmp_path):
    dest = tmp_path / "node" / "workload"
    assert cli("sync", *sync_args(workload, sshd, dest, "i-0ccccccccccccccc3")).returncode == 0
    python = node_venv(tmp_path / "node-venv", workload, dest, leave_out="numpy")
    labels = dest / "dataset" / "labels.csv"
    text = bytearray(labels.read_bytes())
    text[3] ^= 0x01  # one byte, same size and a later mtime: rsync's quick check would not notice it either way
    labels.write_bytes(bytes(text))
    (dest / "dataset" / ".gitignore").unlink()
    done = cli("verify", *sync_args(workload, sshd, dest, "i-0ccccccccccccccc3"), "--python", str(python),
               "--test", "echo 'FAILED tests/test_model.py::test_loss'; exit 3")
    assert done.returncode == 1, done.stdout + done.stderr
    report = done.stdout
    assert "DIFF  i-0ccccccccccccccc3: data: dataset/labels.csv differs from its SHA-256" in report
    assert "DIFF  i-0ccccccccccccccc3: packages: numpy==1.26.4 is not installed" in report
    assert "failed (exit 3)" in report and "FAILED tests/test_model.py::test_loss" in report
    assert "DIFF  i-0ccccccccccccccc3: data: dataset/.gitignore is missing or unreadable" in report
    assert report.count(".gitignore") == 1
    assert "verify: 4 difference(s)" in report
    assert "big.bin" not in report  # the untouched files pass


def test_shared_filesystem_gets_one_copy_and_nodes_each_get_theirs(workload, sshd, tmp_path):
    before = len(sshd.tunnelled_hosts())
    shared = cli("sync", *sync_args(workload, sshd, tmp_path / "shared", "node-a", "node-b", stack="shared_stack"))
    assert shared.returncode == 0, shared.stderr + shared.stdout
    assert set(sshd.tunnelled_hosts()[before:]) == {"node-a"}
    before = len(sshd.tunnelled_hosts())
    each = cli("sync", *sync_args(workload, sshd, tmp_path / "each", "node-a", "node-b"))
    assert each.returncode == 0, each.stderr + each.stdout
    assert set(sshd.tunnelled_hosts()[before:]) == {"node-a", "node-b"}


def test_no_route_but_the_tunnel(workload, sshd, tmp_path, capsys):
    """Without a working tunnel the node's name leads nowhere: ssh fails, the copy is tried again (the SSM agent
    drops sessions after boot), then exit 1 with rsync's own message."""
    args = sync_args(workload, sshd, tmp_path / "direct", "i-0ddddddddddddddd4")
    proxy = args.index("--proxy-command")
    attempts = tmp_path / "attempts"
    args[proxy + 1] = f"sh -c 'echo %h >> {attempts}; exit 1'"
    done = cli("sync", *args, "--retries", "1")
    assert done.returncode == 1
    # rsync says 255 (ssh's failure) or 12 (the closed pipe, when it reads it before reaping ssh): both are retried.
    assert re.search(r"^sync: ssh to i-0ddddddddddddddd4 failed \((ssh could not connect, rsync exited 255|the "
                     r"connection closed mid-stream, rsync exited 12)\); retrying in 5 s \(1 of 1\)$", done.stdout,
                     re.MULTILINE), done.stdout
    assert "run the same command again to resume" in done.stdout
    assert attempts.read_text().split() == ["i-0ddddddddddddddd4"] * 2
    assert not (tmp_path / "direct").exists()


def test_sync_and_verify_find_the_node_through_the_cloud_cli(workload, sshd, tmp_path):
    """No --host: the node comes from `pulumi stack output` (the fleet's name) and `aws ec2 describe-instances`
    (stand-ins answering recorded JSON), then the copy and the check go through the tunnel to that node."""
    import shutil

    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: migrated\nruntime: python\nstackConfigDir: stacks\n")
    stack = project / "stacks" / workload["stack"].name
    shutil.copy(workload["stack"], stack)
    fakes = fake_clis(tmp_path / "fakes")
    env = fakes.env({"pulumi stack output": {"file": "pulumi-stack-output-aws.json"},
                     "aws ec2 describe-instances": {"file": "aws-describe-instances-one.json"}})
    dest = tmp_path / "node" / "workload"
    before = len(sshd.tunnelled_hosts())
    args = [str(stack), *sync_args(workload, sshd, dest)[1:]]
    done = cli("sync", *args, env=env)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "found 1 running node(s) with `aws ec2 describe-instances" in done.stdout
    assert (dest / "dataset" / "labels.csv").read_text() == "id,label\n1,cat\n"
    python = node_venv(tmp_path / "node-venv", workload, dest)
    verified = cli("verify", *args, "--python", str(python), env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verify: no differences" in verified.stdout
    assert set(sshd.tunnelled_hosts()[before:]) == {"i-0fffffffffffffff6"}
    describe = ["aws", "ec2", "describe-instances", "--region", "us-east-1", "--filters",
                "Name=tag:aws:autoscaling:groupName,Values=gpufleet-fleet-3f2a9c1",
                "Name=instance-state-name,Values=running", "--output", "json"]
    pulumi = ["pulumi", "stack", "output", "--json", "--non-interactive", "--stack", "migrate-nodes"]
    assert fakes.calls() == [pulumi, describe] * 2
    assert fakes.folders()[0] == str(project)


def test_without_host_or_cloud_cli_one_message(workload, tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:/usr/bin:/bin")  # ssh and rsync, no aws
    assert main(["migrate", "verify", str(workload["stack"])]) == 2
    err = capsys.readouterr().err
    assert "`aws` is not installed here" in err and "`--host`" in err


def test_manifest_on_the_node_is_the_captured_one(workload, sshd, tmp_path):
    dest = tmp_path / "node" / "workload"
    assert cli("sync", *sync_args(workload, sshd, dest, "i-0eeeeeeeeeeeeeee5")).returncode == 0
    assert json.loads((dest / ".gpufleet-migrate" / "manifest.json").read_text()) == json.loads(
        workload["manifest"].read_text())
    sums = (dest / ".gpufleet-migrate" / "SHA256SUMS").read_text()
    assert subprocess.run(["sha256sum", "-c", "--quiet", str(dest / ".gpufleet-migrate" / "SHA256SUMS")],
                          cwd=dest, capture_output=True).returncode == 0 and "dataset/labels.csv" in sums


def test_azure_bastion_helper_carries_the_copy(workload, sshd, tmp_path):
    """The cloud's own ProxyCommand on Azure (bastion-proxy.sh), with a stand-in `az` that tunnels to the test sshd
    the way `az network bastion tunnel` tunnels to the VM."""
    import shutil

    import yaml

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "az").write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).with_name('fake_az.py')} \"$@\"\n")
    (bin_dir / "az").chmod(0o755)
    if not shutil.which("python3"):
        (bin_dir / "python3").symlink_to(sys.executable)
    stack = tmp_path / "Pulumi.azure-migrated.yaml"
    stack.write_text(yaml.safe_dump({"config": {
        "gpufleet:cluster": {"cloud": "azure", "region": "eastus", "nodes": 1,
                             "accelerator": {"gpu": "T4", "gpus_per_node": 1},
                             "access": {"ssh_public_key": Path(__file__).with_name("example_key.pub").read_text()}},
        MIGRATION_KEY: {"manifest": str(workload["manifest"])}}}))
    # A name no earlier run used: a tunnel an interrupted run left behind must not count as this one's.
    vm = f"/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-{uuid.uuid4().hex}"
    log = tmp_path / "bastion.log"
    dest = tmp_path / "node" / "workload"
    ssh = [arg for arg in sshd.ssh_arguments()]
    del ssh[ssh.index("--proxy-command"):ssh.index("--proxy-command") + 2]
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_BASTION_LOG": str(log),
           "FAKE_BASTION_SSHD_PORT": str(sshd.port)}
    done = subprocess.run([sys.executable, "-m", "gpufleet.plan.cli", "migrate", "sync", str(stack), "--host", vm,
                           "--bastion", "hub-bastion", "--bastion-resource-group", "hub-rg", "--to", str(dest), *ssh],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (dest / "dataset" / "labels.csv").read_text() == "id,label\n1,cat\n"
    assert set(log.read_text().splitlines()) == {f"hub-bastion hub-rg {vm} 22"}
    assert left_running(vm) == []  # each ssh's tunnel is closed when that ssh ends

