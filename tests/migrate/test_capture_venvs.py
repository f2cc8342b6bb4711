"""`capture` on real virtual environments built here, and `match` on what it captured (marker `migrate`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpufleet.plan.cli import main
from tests.migrate.fixtures import build_wheel, editable_project, fake_nvidia_smi, make_venv, pip_install

pytestmark = pytest.mark.migrate


@pytest.fixture(scope="module")
def workload(tmp_path_factory) -> dict:
    """A venv with an editable project, a local-version (`+cu113`) wheel, an `@ file://` wheel that still exists,
    one whose file is gone (conda's build paths), and a Windows-only package; plus a data folder."""
    root = tmp_path_factory.mktemp("workload")
    wheels = root / "wheels"
    python = make_venv(root / "venv")
    build_wheel(wheels, "torch", "1.12.1+cu113")
    build_wheel(wheels, "pywin32", "306")
    local = build_wheel(root / "local", "tokenizer-local", "0.9.1")
    gone = build_wheel(root / "croot", "vanished-build", "2.0.0")
    pip_install(python, "--find-links", str(wheels), "torch==1.12.1+cu113", "pywin32")  # as from an index
    pip_install(python, str(local), str(gone))  # by path: `name @ file://...` in pip freeze
    gone.unlink()
    pip_install(python, "-e", str(editable_project(root / "project")))
    data = root / "data"
    (data / "shards").mkdir(parents=True)
    (data / "shards" / "000.bin").write_bytes(os.urandom(4096))
    (data / "labels.csv").write_text("id,label\n1,cat\n")
    (data / "scratch.log").write_text("ignored\n")
    (data / ".gitignore").write_text("*.log\n")
    return {"root": root, "python": python, "data": data, "local_wheel": local, "project": root / "project"}


def capture(workload: dict, tmp_path: Path, monkeypatch, gpu: str | None, *, with_smi: bool = True) -> dict:
    bin_dir = fake_nvidia_smi(tmp_path / "bin", gpu) if with_smi else tmp_path / "empty-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    out = tmp_path / "manifest.json"
    assert main(["migrate", "capture", "--python", str(workload["python"]), "--data", str(workload["data"]),
                 "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_capture_normalises_a_real_venv(workload, tmp_path, monkeypatch):
    manifest = capture(workload, tmp_path, monkeypatch, "a100-40gb")
    packages = {p["name"]: p for p in manifest["python"]["packages"]}
    assert set(packages) == {"torch", "tokenizer-local", "vanished-build", "pywin32", "demo-editable"}
    torch = packages["torch"]
    assert (torch["version"], torch["local"], torch["index_url"]) == (
        "1.12.1", "cu113", "https://download.pytorch.org/whl/cu113")
    assert packages["demo-editable"]["source"] == "editable"
    assert Path(packages["demo-editable"]["path"]) == workload["project"]
    assert packages["tokenizer-local"]["source"] == "file"
    assert Path(packages["tokenizer-local"]["path"]) == workload["local_wheel"]
    assert packages["vanished-build"]["source"] == "index"  # its file:// path is gone: resolved from the index
    assert packages["pywin32"]["marker"] == 'sys_platform == "win32"'
    assert manifest["frameworks"]["cuda"] == "11.3"
    assert manifest["frameworks"]["cuda_source"] == "torch 1.12.1+cu113"
    assert manifest["frameworks"]["driver"] == "535.183.01"
    assert manifest["gpus"] == [{"name": "NVIDIA A100-SXM4-40GB", "memory_mib": 40960, "model": "A100",
                                 "architecture": "ampere"}]
    (folder,) = manifest["data"]
    assert set(folder["sha256"]) == {".gitignore", "labels.csv", "shards/000.bin"}  # scratch.log is git-ignored
    assert folder["gitignore"] is True


def test_capture_reads_each_gpu(workload, tmp_path, monkeypatch):
    t4 = capture(workload, tmp_path / "t4", monkeypatch, "t4")
    assert [(g["model"], g["memory_mib"]) for g in t4["gpus"]] == [("T4", 15360)]
    rtx = capture(workload, tmp_path / "rtx", monkeypatch, "rtx3090")
    assert [(g["model"], g["architecture"]) for g in rtx["gpus"]] == [(None, "ampere")]


def test_capture_without_a_gpu(workload, tmp_path, monkeypatch):
    failed_driver = capture(workload, tmp_path / "nodriver", monkeypatch, None)
    assert failed_driver["gpus"] == []
    assert any("nvidia-smi exited 9" in note for note in failed_driver["notes"])
    no_tool = capture(workload, tmp_path / "notool", monkeypatch, None, with_smi=False)
    assert no_tool["gpus"] == [] and any("not found" in note for note in no_tool["notes"])


@pytest.mark.parametrize(("gpu", "cloud", "zone", "expected"), [
    ("a100-40gb", "gcp", None, "1 x A100 (a2-highgpu-1g) in us-central1"),
    ("t4", "aws", "use1-az4", "1 x T4 (g4dn.xlarge) in us-east-1"),  # the catalog has no zones for it there
    # No cloud sells an RTX 3090: the nearest with 24 GB or more that CUDA 11.3 runs on (not the Ada L4).
    ("rtx3090", "aws", None, "1 x A10G (g5.xlarge) in us-east-1"),
    # Azure's A10 sizes need the GRID driver, which gpufleet does not install: the next size up.
    ("rtx3090", "azure", None, "1 x A100-80GB (Standard_NC24ads_A100_v4) in eastus"),
])
def test_match_what_was_captured(workload, tmp_path, monkeypatch, capsys, gpu, cloud, zone, expected):
    capture(workload, tmp_path, monkeypatch, gpu)
    capsys.readouterr()
    out = tmp_path / "stack.yaml"
    args = ["migrate", "match", str(tmp_path / "manifest.json"), "--cloud", cloud, "--out", str(out),
            "--ssh-public-key", str(Path(__file__).with_name("example_key.pub"))]
    region = {"gcp": "us-central1", "aws": "us-east-1", "azure": "eastus"}[cloud]
    assert main([*args, "--region", region, *(["--zone", zone] if zone else [])]) == 0
    assert expected in capsys.readouterr().out
    assert main(["plan", str(out)]) == 0


def test_match_refuses_the_captured_cuda_on_a_newer_gpu(workload, tmp_path, monkeypatch, capsys):
    capture(workload, tmp_path, monkeypatch, "t4")
    capsys.readouterr()
    code = main(["migrate", "match", str(tmp_path / "manifest.json"), "--cloud", "aws", "--gpu", "H100",
                 "--region", "us-east-1", "--out", str(tmp_path / "stack.yaml")])
    assert code == 2
    err = capsys.readouterr().err
    assert "H100 (hopper) needs CUDA 11.8 or later" in err and "CUDA 11.3 (torch 1.12.1+cu113)" in err
    assert not (tmp_path / "stack.yaml").exists()
