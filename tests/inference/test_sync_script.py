"""The repository sync script, run with a stand-in `docker` that records its arguments and plays the cloud CLI:
each cloud's copy command and identity, the Azure URI split into account, container and prefix, the spec's
config.pbtxt laid over the copy, and a declared model missing from the repository failing the unit."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init.parts import FILES_DIR
from gpufleet.cloud_init.triton import INFERENCE_DIR, SYNC_IMAGES

SCRIPT = INFERENCE_DIR / "usr/local/lib/gpufleet/triton-sync"
DIGEST = "@sha256:" + "5e" * 32  # the node runs the sync container by digest only
# Plays the CLI container: records its arguments, then fills the mounted folder with the models in $FAKE_MODELS
# (under the Azure prefix, as `az storage blob download-batch` keeps blob paths).
FAKE_DOCKER = """#!/bin/bash
printf '%s\\n' "$@" > "$FAKE_LOG"
mount="${6%%:*}"
for model in $FAKE_MODELS; do mkdir -p "$mount/$FAKE_PREFIX$model/1"; echo weights > "$mount/$FAKE_PREFIX$model/1/model.onnx"; done
"""


def run_sync(tmp_path: Path, cloud: str, uri: str, models: str, prefix: str = "") -> tuple[subprocess.CompletedProcess, list[str]]:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    configs = tmp_path / "config"
    (configs / "resnet50").mkdir(parents=True)
    (configs / "resnet50/config.pbtxt").write_text('name: "resnet50"\n')
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPUFLEET_CLOUD": cloud, "GPUFLEET_TRITON_REPOSITORY": uri,
           "GPUFLEET_LIB": str(FILES_DIR / "usr/local/lib/gpufleet"), "GPUFLEET_ENV_FILE": "/nonexistent",
           "GPUFLEET_TRITON_SYNC_IMAGE": SYNC_IMAGES[cloud] + DIGEST, "GPUFLEET_TRITON_CONFIG_DIR": str(configs),
           "GPUFLEET_TRITON_MODELS_DIR": str(tmp_path / "models"), "FAKE_LOG": str(tmp_path / "docker.log"),
           "FAKE_MODELS": models, "FAKE_PREFIX": prefix}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    log = (tmp_path / "docker.log").read_text().splitlines() if (tmp_path / "docker.log").exists() else []
    return done, log


@pytest.mark.parametrize("cloud,uri,copy", [
    ("aws", "s3://my-models/triton", ["s3", "sync", "--delete", "--only-show-errors", "s3://my-models/triton", "/sync"]),
    ("gcp", "gs://my-models/triton", ["gcloud", "storage", "rsync", "--recursive",
                                      "--delete-unmatched-destination-objects", "gs://my-models/triton", "/sync"]),
])
def test_aws_and_gcp_copy_with_the_cli_and_lay_the_spec_config_over(tmp_path, cloud, uri, copy):
    done, log = run_sync(tmp_path, cloud, uri, "resnet50 extra")
    assert done.returncode == 0, done.stderr
    assert log[:4] == ["run", "--rm", "--network", "host"] and log[6] == SYNC_IMAGES[cloud] + DIGEST and log[7:] == copy
    models = tmp_path / "models"
    assert (models / "resnet50/config.pbtxt").read_text() == 'name: "resnet50"\n'
    assert (models / "resnet50/1/model.onnx").exists() and (models / "extra/1").is_dir()


def test_azure_splits_the_blob_uri_and_serves_the_prefix(tmp_path):
    uri = "https://mymodels.blob.core.windows.net/models/triton/v2"
    done, log = run_sync(tmp_path, "azure", uri, "resnet50", prefix="triton/v2/")
    assert done.returncode == 0, done.stderr
    assert log[-3:] == ["mymodels", "models", "triton/v2/*"]
    command = "\n".join(log)
    assert "az login --identity" in command and "--auth-mode login" in command
    assert (tmp_path / "models/resnet50/config.pbtxt").exists()


def test_a_declared_model_missing_from_the_repository_fails(tmp_path):
    done, _ = run_sync(tmp_path, "aws", "s3://my-models/triton", "other")
    assert done.returncode == 1
    assert "model resnet50 is declared in the spec but not in s3://my-models/triton" in done.stderr
    assert not (tmp_path / "models").exists()
