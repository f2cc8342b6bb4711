"""The AWS node config bootstrap, run as cloud-init runs a boothook: a real process against the fake IMDSv2 and S3.

It must install the exact config it was given (digest checked) where cloud-init reads it, fetch nothing on a later
boot, retry a refused or wrong object, and power the node off when no config comes, so the group replaces it."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init.s3_bootstrap import aws_bootstrap, node_config_key
from tests.validators import require_tool

from .metadata_servers import MetadataServer
from .test_lint import SHELLCHECK_HINT

BUCKET = "gpufleet-node-config-0a1b2c3"
CONFIG = "#cloud-config\nwrite_files:\n- path: /etc/gpufleet/node.env\n  content: |\n    GPUFLEET_CLOUD=aws\n"


def boothook_script(tmp_path: Path, server: MetadataServer, config: str = CONFIG) -> Path:
    """The boothook as cloud-init runs it: the `#cloud-boothook` line removed, executable."""
    text = aws_bootstrap(BUCKET, config, s3_endpoint=server.url)
    assert text.startswith("#cloud-boothook\n#!/bin/sh\n")
    script = tmp_path / "boothook"
    script.write_text(text.removeprefix("#cloud-boothook\n"))
    script.chmod(0o700)
    return script


def run_boothook(tmp_path: Path, server: MetadataServer, script: Path,
                 attempts: int = 3) -> subprocess.CompletedProcess:
    """Runs it with a fake systemctl that records its arguments; cloud.cfg.d and gpufleet-aws go under tmp_path."""
    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    systemctl = tools / "systemctl"
    systemctl.write_text(f"#!/bin/sh\necho \"$*\" >>{tmp_path / 'systemctl.log'}\n")
    systemctl.chmod(0o755)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")},
           "PATH": f"{tools}:{os.environ['PATH']}", "GPUFLEET_METADATA_URL": server.url,
           "GPUFLEET_CLOUD_CFG_DIR": str(tmp_path / "cloud.cfg.d"), "GPUFLEET_BOOTSTRAP_DIR": str(tmp_path / "run"),
           "GPUFLEET_BOOTSTRAP_ATTEMPTS": str(attempts), "GPUFLEET_BOOTSTRAP_PAUSE": "0"}
    return subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)


def installed(tmp_path: Path) -> Path:
    return tmp_path / "cloud.cfg.d" / "90-gpufleet-node.cfg"


@pytest.fixture
def aws():
    with MetadataServer("aws") as server:
        server.s3_objects[f"/{BUCKET}/{node_config_key(CONFIG)}"] = CONFIG.encode()
        yield server


def test_the_config_is_installed_byte_for_byte_and_private(tmp_path, aws):
    done = run_boothook(tmp_path, aws, boothook_script(tmp_path, aws))
    assert done.returncode == 0, done.stderr
    assert installed(tmp_path).read_bytes() == CONFIG.encode()
    assert stat.S_IMODE(installed(tmp_path).stat().st_mode) == 0o600
    assert [g["authorization"].split("/")[2:4] for g in aws.s3_gets] == [["us-east-2", "s3"]]
    assert not (tmp_path / "systemctl.log").exists()
    assert list((tmp_path / "cloud.cfg.d").iterdir()) == [installed(tmp_path)]


def test_a_later_boot_fetches_nothing(tmp_path, aws):
    script = boothook_script(tmp_path, aws)
    assert run_boothook(tmp_path, aws, script).returncode == 0
    requests = len(aws.requests)
    again = run_boothook(tmp_path, aws, script)
    assert again.returncode == 0 and "already in place" in again.stderr
    assert len(aws.requests) == requests


def test_a_changed_config_replaces_the_installed_one(tmp_path, aws):
    assert run_boothook(tmp_path, aws, boothook_script(tmp_path, aws)).returncode == 0
    newer = CONFIG + "runcmd: [[true]]\n"
    aws.s3_objects[f"/{BUCKET}/{node_config_key(newer)}"] = newer.encode()
    assert run_boothook(tmp_path, aws, boothook_script(tmp_path, aws, newer)).returncode == 0
    assert installed(tmp_path).read_text() == newer


def test_a_refused_get_is_retried(tmp_path, aws):
    aws.s3_failures = 2
    done = run_boothook(tmp_path, aws, boothook_script(tmp_path, aws), attempts=3)
    assert done.returncode == 0, done.stderr
    assert len(aws.s3_gets) == 3 and done.stderr.count("HTTP 403") == 2
    assert installed(tmp_path).read_bytes() == CONFIG.encode()


def test_an_object_with_another_digest_is_never_installed_and_the_node_powers_off(tmp_path, aws):
    aws.s3_objects[f"/{BUCKET}/{node_config_key(CONFIG)}"] = b"#cloud-config\nruncmd: [[reboot]]\n"
    done = run_boothook(tmp_path, aws, boothook_script(tmp_path, aws), attempts=2)
    assert done.returncode == 1
    assert f"does not have digest {hashlib.sha256(CONFIG.encode()).hexdigest()}" in done.stderr
    assert "powering off so the group replaces this node" in done.stderr
    assert (tmp_path / "systemctl.log").read_text() == "--no-block poweroff\n"
    assert list((tmp_path / "cloud.cfg.d").iterdir()) == [] and len(aws.s3_gets) == 2


def test_no_credentials_means_no_config_and_a_power_off(tmp_path):
    with MetadataServer("aws", broken=True) as broken:
        done = run_boothook(tmp_path, broken, boothook_script(tmp_path, broken), attempts=2)
    assert done.returncode == 1 and "no instance identity from IMDS" in done.stderr
    assert (tmp_path / "systemctl.log").read_text() == "--no-block poweroff\n"
    assert not installed(tmp_path).exists()


def test_the_boothook_passes_shellcheck(tmp_path):
    tool = require_tool("shellcheck", SHELLCHECK_HINT)
    script = tmp_path / "boothook"
    script.write_text(aws_bootstrap(BUCKET, CONFIG).removeprefix("#cloud-boothook\n"))
    done = subprocess.run([tool, "-s", "sh", str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout


def test_the_key_and_digest_follow_the_content():
    assert node_config_key(CONFIG) == f"gpufleet/node-config/{hashlib.sha256(CONFIG.encode()).hexdigest()}.yaml"
    assert aws_bootstrap(BUCKET, CONFIG) == aws_bootstrap(BUCKET, CONFIG)
    assert aws_bootstrap(BUCKET, CONFIG) != aws_bootstrap(BUCKET, CONFIG + "\n")
    assert "export GPUFLEET_S3_ENDPOINT" not in aws_bootstrap(BUCKET, CONFIG)
