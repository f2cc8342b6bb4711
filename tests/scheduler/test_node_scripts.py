"""The Slurm node scripts as each node runs them (its cloud's sections only): `slurm/join` reads the controller's
address and the munge key from loopback stand-ins of Azure's IMDS and Key Vault; `slurm/health-check` drains the node
in Slurm when the acceptance check failed or a GPU is gone. Commands the scripts call on a node (scontrol, systemctl,
nvidia-smi) are recording stubs on PATH."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from gpufleet.cloud_init.parts import for_node
from tests.fake_http import LoopbackServer, QuietHandler

FILES = Path(__file__).parents[2] / "cloud_init" / "files"
LIB = FILES / "usr/local/lib/gpufleet"
KEY = secrets.token_bytes(1024)


def node_copy(relative: str, cloud: str, folder: Path) -> Path:
    target = folder / Path(relative).name
    target.write_text(for_node((LIB / relative).read_text(), {cloud}))
    target.chmod(0o755)
    return target


def stubs(folder: Path, **scripts: str) -> dict[str, str]:
    """PATH with a stub per command that records its arguments to `calls` and runs `scripts[name]`."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    for name, body in scripts.items():
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> {folder / "calls"}\n{body}\n')
        stub.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


class AzureHandler(QuietHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        if self.headers.get("Metadata") == "true" and self.path.startswith("/metadata/instance/compute/tagsList"):
            self._send(200, json.dumps([
                {"name": "gpufleet-slurm-controller", "value": "10.0.0.10"},
                {"name": "gpufleet-slurm-key", "value": f"{self.server.url}/secrets/gpufleet-slurm-munge-key"}]))
        elif self.path.startswith("/metadata/identity/oauth2/token"):
            self._send(200, json.dumps({"access_token": "token"}))
        elif self.path.startswith("/secrets/gpufleet-slurm-munge-key") and \
                self.headers.get("Authorization") == "Bearer token":
            self._send(200, json.dumps({"value": base64.b64encode(KEY).decode()}))
        else:
            self._send(404, "{}")


@pytest.fixture
def azure_services():
    server = LoopbackServer(AzureHandler)
    server.httpd.url = server.url
    yield server.start()
    server.close()


def test_join_reads_the_controller_and_the_key_with_the_nodes_identity(azure_services, tmp_path):
    if os.geteuid() != 0 or subprocess.run(["id", "munge"], capture_output=True).returncode != 0:
        pytest.skip("needs root and the munge user (apt-get install munge)")
    join = node_copy("slurm/join", "azure", tmp_path)
    env = stubs(tmp_path, systemctl="exit 0")
    env.update(GPUFLEET_LIB=str(LIB), GPUFLEET_ENV_FILE="/dev/null", GPUFLEET_METADATA_URL=azure_services.url,
               GPUFLEET_RUN_DIR=str(tmp_path / "run"), GPUFLEET_MUNGE_KEY_FILE=str(tmp_path / "munge" / "munge.key"))
    done = subprocess.run([str(join)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    key = tmp_path / "munge" / "munge.key"
    assert key.read_bytes() == KEY
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert (tmp_path / "run" / "slurm.env").read_text() == "GPUFLEET_SLURM_CONTROLLER='10.0.0.10'\n"
    assert (tmp_path / "calls").read_text().splitlines() == ["systemctl restart munge.service"]


@pytest.mark.parametrize(("health_active", "gpus_listed", "drained"), [
    (True, 8, None),
    (False, 8, "acceptance check failed"),
    (True, 7, "nvidia-smi lists 7 of 8 GPUs"),
])
def test_health_check_drains_in_slurm_when_the_node_is_unhealthy(tmp_path, health_active, gpus_listed, drained):
    check = node_copy("slurm/health-check", "aws", tmp_path)
    (tmp_path / "node.env").write_text("GPUFLEET_GPUS='8'\n")
    listing = "".join(f"echo 'GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})'\n" for i in range(gpus_listed))
    env = stubs(tmp_path, systemctl=f"exit {0 if health_active else 3}", scontrol="exit 0")
    (tmp_path / "bin" / "nvidia-smi").write_text(f"#!/bin/sh\n{listing}")
    (tmp_path / "bin" / "nvidia-smi").chmod(0o755)
    env.update(GPUFLEET_NODE_ENV=str(tmp_path / "node.env"))
    done = subprocess.run([str(check)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = [c for c in (tmp_path / "calls").read_text().splitlines() if c.startswith("scontrol")]
    if drained is None:
        assert calls == []
    else:
        [call] = calls
        node = subprocess.run(["hostname", "-s"], capture_output=True, text=True).stdout.strip()
        assert call.startswith(f"scontrol update nodename={node} state=DRAIN reason=gpufleet: unhealthy: {drained}")


@pytest.mark.parametrize(("drain_seconds", "polls"), [("10", 2), ("", 3)])
def test_the_slurm_drain_waits_for_jobs_only_inside_the_hooks_budget(tmp_path, drain_seconds, polls):
    """A job that does not leave: the drain polls squeue until the watcher's budget for the hook (less time for the
    delete) or GPUFLEET_SLURM_DRAIN_WAIT rounds, whichever is fewer, then deletes the node all the same."""
    drain = node_copy("slurm/drain", "aws", tmp_path)
    env = stubs(tmp_path, scontrol="exit 0", squeue="echo 42", sleep="exit 0")
    env.update(GPUFLEET_NODE_ENV=str(tmp_path / "none"), GPUFLEET_SLURM_NODE_NAME="node-1",
               GPUFLEET_SLURM_DRAIN_WAIT="3", GPUFLEET_DRAIN_SECONDS=drain_seconds, GPUFLEET_NOTICE_KIND="interruption")
    if not drain_seconds:
        del env["GPUFLEET_DRAIN_SECONDS"]
    done = subprocess.run([str(drain)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert sum(call.startswith("sleep") for call in calls) == polls
    assert calls[0].startswith("scontrol update nodename=node-1 state=DRAIN reason=gpufleet: interruption")
    assert calls[-1] == "scontrol delete nodename=node-1"
