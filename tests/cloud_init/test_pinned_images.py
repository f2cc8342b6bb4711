"""Every container a node runs is run by digest: the scripts that start one (dcgm-exporter, Triton, Triton's model
copy) refuse a bare tag or anything but a sha256 digest before calling docker, and pass the pinned reference on, so
docker checks the pulled bytes against the digest. Run with a stand-in `docker` that records its arguments."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init.config import DCGM_EXPORTER_IMAGE
from gpufleet.cloud_init.parts import FILES_DIR
from gpufleet.cloud_init.triton import INFERENCE_DIR, SYNC_IMAGES

LIB = FILES_DIR / "usr/local/lib/gpufleet"
TRITON = "nvcr.io/nvidia/tritonserver:25.08-py3"
DIGEST = "sha256:" + "0123456789abcdef" * 4
FAKE_DOCKER = """#!/bin/bash
printf '%s\\n' "$@" >> "$FAKE_LOG"
"""
# script, the variable naming its image, the tag it runs, the other variables it needs
SCRIPTS = {
    "dcgm-exporter": (LIB / "dcgm-exporter", "GPUFLEET_DCGM_EXPORTER_IMAGE", DCGM_EXPORTER_IMAGE, {}),
    "triton-server": (INFERENCE_DIR / "usr/local/lib/gpufleet/triton-server", "GPUFLEET_TRITON_IMAGE", TRITON,
                      {"GPUFLEET_TRITON_HTTP_PORT": "8000", "GPUFLEET_TRITON_GRPC_PORT": "8001",
                       "GPUFLEET_TRITON_METRICS_PORT": "8002", "GPUFLEET_TRITON_EXIT_TIMEOUT": "150"}),
    "triton-sync": (INFERENCE_DIR / "usr/local/lib/gpufleet/triton-sync", "GPUFLEET_TRITON_SYNC_IMAGE",
                    SYNC_IMAGES["aws"], {"GPUFLEET_CLOUD": "aws", "GPUFLEET_TRITON_REPOSITORY": "s3://m/triton"}),
}


def run(tmp_path: Path, name: str, image: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    script, variable, _, extra = SCRIPTS[name]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    (tmp_path / "config").mkdir(exist_ok=True)
    log = tmp_path / "docker.log"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPUFLEET_LIB": str(LIB), "GPUFLEET_ENV_FILE": "/nonexistent",
           "GPUFLEET_CONTAINER_RUNTIME": "docker", "FAKE_LOG": str(log), variable: image,
           "GPUFLEET_TRITON_CONFIG_DIR": str(tmp_path / "config"), "GPUFLEET_TRITON_MODELS_DIR": str(tmp_path / "m"),
           **extra}
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30,
                          cwd=tmp_path)
    return done, log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("name", sorted(SCRIPTS))
@pytest.mark.parametrize("suffix", ["", "@sha256:resolved-at-pulumi-up", "@sha256:" + "AB" * 32, "@sha256:abc"])
def test_an_image_not_pinned_by_digest_is_refused_before_docker_runs(tmp_path, name, suffix):
    image = SCRIPTS[name][2] + suffix
    done, calls = run(tmp_path, name, image)
    assert done.returncode != 0
    assert "not pinned by digest" in done.stderr and image in done.stderr
    assert calls == []


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_pinned_image_is_run_by_its_digest(tmp_path, name):
    image = f"{SCRIPTS[name][2]}@{DIGEST}"
    done, calls = run(tmp_path, name, image)
    assert "not pinned by digest" not in done.stderr
    runs = [i for i, arg in enumerate(calls) if arg == "run"]
    assert runs, done.stderr
    assert image in calls and not any(arg == SCRIPTS[name][2] for arg in calls)  # never the bare tag
