"""The built wheel, installed into a fresh venv outside the checkout: it plans a user's own Pulumi project and
runs the Python example, and writes nothing into its own package.

One test on purpose: building the wheel and the venv happens once (about 10-20 s). The venv reuses this
checkout's installed dependencies through a path file (no download, no index) but not its editable gpufleet:
`import gpufleet` must find the wheel's copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "fixtures" / "wheel" / "run_under_mocks.py"
EXAMPLE = ROOT / "examples" / "python-existing-subnet"
SOURCES = ("pyproject.toml", "README.md", "components", "cloud_init", "ansible")
NOT_SHIPPED = {"README.md", "requirements.txt", "alerts.test.yml"}


def run(command: list, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert not check or done.returncode == 0, done.stderr[-3000:]
    return done


def build_and_install(work: Path) -> tuple[Path, Path]:
    """(venv python, installed package folder)."""
    source = work / "src"
    source.mkdir()
    for name in SOURCES:
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", work / "dist", source], work)
    wheel = next((work / "dist").glob("gpufleet-*.whl"))
    # The copy holds whatever __pycache__ the checkout has (the tests write them): none of it is package data.
    assert [name for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".pyc")] == []
    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], work)
    python = venv / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], work).stdout.strip())
    (site / "checkout-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel], work)
    return python, site / "gpufleet"


def shipped_files(package: Path) -> set[str]:
    return {str(p.relative_to(package)) for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def source_files() -> set[str]:
    names = {str(p.relative_to(ROOT / "components")) for p in (ROOT / "components").rglob("*") if p.is_file()}
    names |= {f"cloud_init/{p.relative_to(ROOT / 'cloud_init')}" for p in (ROOT / "cloud_init").rglob("*") if p.is_file()}
    names |= {f"ansible/{p.relative_to(ROOT / 'ansible')}" for p in (ROOT / "ansible").rglob("*") if p.is_file()}
    return {n for n in names if "__pycache__" not in n and Path(n).name not in NOT_SHIPPED}


@pytest.mark.slow  # builds a wheel and a venv (about 12 s of CPU): off the default run, `.ci/run` runs it
@pytest.mark.runs_first
def test_the_wheel_plans_a_users_project_and_runs_the_example_outside_the_checkout(tmp_path):
    python, package = build_and_install(tmp_path)
    assert source_files() - shipped_files(package) == set()
    before = {str(p): p.stat().st_mtime_ns for p in package.rglob("*") if "__pycache__" not in p.parts}

    # A user's project: only Pulumi.yaml, __main__.py and stacks/; plans run from the project or below it.
    project = tmp_path / "my-clusters"
    (project / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, project / name)
    shutil.copy(ROOT / "stacks" / "Pulumi.aws-dev.yaml", project / "stacks")
    (project / "notes").mkdir()
    gpufleet = python.parent / "gpufleet"
    planned = json.loads(run([gpufleet, "plan", "aws-dev", "--json"], project / "notes").stdout)
    assert planned["outputs"]["instance_type"] == "g6e.xlarge"
    # Shared Lustre and the performance check make aws-dev's node config too large for the launch template: the
    # installed package renders the boothook (cloud_init/boothooks, package data) and the stored config.
    out = tmp_path / "user-data"
    run([gpufleet, "plan", "aws-dev", "--set", "storage.shared.kind=lustre", "--set", "node.health.performance.enabled=true",
         "--out", out], project)
    assert (out / "gpufleet-lt.user-data.yaml").read_text().startswith("#cloud-boothook\n#!/bin/sh\n")
    assert (out / "gpufleet-node-config-object.user-data.yaml").read_text().startswith("#cloud-config\n")
    # The Ansible collection ships inside the package; the inventory puts that copy on Ansible's collection path.
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"ssm_transfer_bucket": "gpufleet-ssm-test", "fleet_name": "gpufleet-nodes"}))
    run([gpufleet, "inventory", "aws-dev", "--outputs", outputs, "--out", tmp_path / "inventory"], project)
    link = tmp_path / "inventory" / "collections" / "ansible_collections" / "gpufleet" / "day2"
    assert link.resolve() == package / "ansible" and (link / "playbooks" / "driver_upgrade.yml").is_file()
    assert os.access(link / "files" / "bastion-proxy", os.X_OK)
    refused = run([gpufleet, "plan", "aws-train"], project, check=False)
    assert refused.returncode == 2 and "`stack`: got 'aws-train'; expected one of aws-dev" in refused.stderr

    # The Python example: a subnet from a StackReference, and the program's own provider.
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example)
    declared = json.loads(run([python, DRIVER, json.dumps({"private_subnet_id": "subnet-0fa7f0e5b1c2d3e4f"}), "use2-az2"], example).stdout)
    assert declared["gpufleet"].startswith(str(package))
    resources = {r["name"]: r for r in declared["resources"]}
    assert resources["train-nodes"]["inputs"]["vpcZoneIdentifiers"] == ["subnet-0fa7f0e5b1c2d3e4f"]
    assert "train-vpc" not in resources
    provider = resources["training-account"]
    children = [r for r in declared["resources"] if r["custom"] and r is not provider]
    assert len(children) > 5
    assert {r["provider"].split("::")[-2] for r in children} == {"training-account"}
    assert declared["outputs"]["fleet_name"] == "train-nodes"

    after = {str(p): p.stat().st_mtime_ns for p in package.rglob("*") if "__pycache__" not in p.parts}
    assert after == before, "nothing may write into the installed package"
