"""`match`: GPU, count and region from a manifest, refusals, and a stack file that `gpufleet plan` accepts (fast:
manifests built in memory, latency from an injected prober that never opens a socket)."""

from __future__ import annotations

import json
import threading

import pytest

from gpufleet.catalog.loader import load_catalog
from gpufleet.migrate.manifest import write_manifest
from gpufleet.migrate.match import match
from gpufleet.migrate.region import ENDPOINTS
from gpufleet.plan.cli import main
from gpufleet.spec.errors import SpecError
from tests.migrate.manifests import manifest

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHUv74cYDTgL8oFvt99knGycEkJnUue0ZgF2W0m5l293 gpufleet-tests"


class FakeProber:
    """Connect times by region, one sample after another; records every host it was asked for (thread-safe: regions
    are measured at once)."""

    def __init__(self, times_ms: dict[str, list[float | None]], default: float | None = 90.0):
        self.times_ms, self.default, self.asked = times_ms, default, []
        self.lock = threading.Lock()

    def __call__(self, host: str, port: int, timeout: float) -> float | None:
        region = next((r for r in self.times_ms if host in {p.format(region=r) for p in ENDPOINTS.values()}), None)
        samples = self.times_ms.get(region, [self.default])
        with self.lock:
            self.asked.append((host, port))
            value = samples[(sum(1 for h, _ in self.asked if h == host) - 1) % len(samples)]
        return None if value is None else value / 1000


def test_same_gpu_nearest_region_by_median_connect_time():
    prober = FakeProber({"us-central1": [30, 31, 29, 300, 30], "europe-west4": [1, 200, 200, 200, 200],
                         "us-east1": [None, 20, 20, 20, 20]})  # its first connect fails: unreachable
    result = match(manifest("a100-40gb"), "gcp", prober=prober, ssh_public_key=KEY)
    assert (result.gpu.model, result.gpus_per_node, result.instance_type) == ("A100", 1, "a2-highgpu-1g")
    assert result.region == "us-central1"  # europe-west4's one fast sample does not beat a lower median
    assert result.cluster["zone"].startswith("us-central1-")
    assert all(port == 443 and host.endswith("-docker.pkg.dev") for host, port in prober.asked)
    assert {lat.region for lat in result.latencies} == set(load_catalog().regions_of("gcp", "a2-highgpu-1g"))


def test_offline_says_so_and_needs_a_named_region():
    offline = FakeProber({}, default=None)
    with pytest.raises(SpecError, match="offline: none of the .* answered a TCP connect; name one with --region"):
        match(manifest("a100-40gb"), "gcp", prober=offline)
    hosts = [host for host, _ in offline.asked]
    assert len(hosts) == len(set(hosts))  # an unreachable region is tried once, not five times
    named = match(manifest("a100-40gb"), "gcp", region="us-central1", prober=FakeProber({}, default=None))
    assert named.region == "us-central1" and any("named with --region" in note for note in named.notes)


def test_a_region_that_does_not_offer_the_gpu_is_refused():
    with pytest.raises(SpecError, match=r"`--region`: got 'mars-north1'; 1 x A100 is not offered there on gcp"):
        match(manifest("a100-40gb"), "gcp", region="mars-north1")


def test_nearest_gpu_with_at_least_the_memory_when_the_model_is_not_sold():
    aws = match(manifest("a100-40gb", cuda="12.1"), "aws", region="us-east-1", ssh_public_key=KEY)
    assert aws.gpu.memory_gib >= 40 and aws.gpus_per_node == 1  # aws sells A100 40GB only 8 to a node
    assert any("nearest with at least 40 GiB" in note for note in aws.notes)
    rtx = match(manifest("rtx3090", cuda="11.3"), "aws", region="us-east-1", ssh_public_key=KEY)
    assert rtx.gpu.memory_gib >= 24 and rtx.gpu.architecture == "ampere"  # L4 (ada) would need CUDA 11.8
    assert any("passed over: L4 (ada) needs CUDA 11.8 or later" in note for note in rtx.notes)


def test_a_local_gpu_is_never_matched_to_a_vgpu_slice():
    """Azure sells its A10 (24 GiB, enough for an RTX 3090) as vGPU slices only: the match passes over them."""
    result = match(manifest("rtx3090", cuda="11.3"), "azure", region="eastus", ssh_public_key=KEY)
    catalog = load_catalog()
    chosen = next(i for i in catalog.instances_of("azure") if i.name == result.instance_type)
    assert not chosen.is_vgpu_slice and result.gpu.model != "A10"


def test_t4_keeps_its_model_and_the_captured_cuda():
    result = match(manifest("t4", cuda="11.8"), "azure", region="eastus", ssh_public_key=KEY)
    assert (result.gpu.model, result.instance_type) == ("T4", "Standard_NC4as_T4_v3")
    assert result.cluster["node"] == {"cuda": "11.8"}
    assert result.hourly_usd and result.hourly_usd > 0


def test_same_count_per_node():
    result = match(manifest("a100-40gb", count=8), "aws", region="us-east-1", zone="use1-az6")
    assert (result.gpu.model, result.gpus_per_node, result.instance_type) == ("A100", 8, "p4d.24xlarge")


def test_old_cuda_on_a_new_gpu_is_refused():
    with pytest.raises(SpecError) as refused:
        match(manifest("t4", cuda="10.2"), "aws", gpu="H100", region="us-east-1")
    message = str(refused.value)
    assert "`--gpu`: got 'H100'; H100 (hopper) needs CUDA 11.8 or later" in message
    assert "the environment was built for CUDA 10.2 (torch 2.1.0+cu102)" in message


def test_every_candidate_refused_lists_why():
    with pytest.raises(SpecError, match=r"built for CUDA 11.3 .* no GPU it runs on is sold there: L40S \(ada\) "
                                        r"needs CUDA 11.8 or later; H100"):
        match(manifest("a100-40gb", cuda="11.3"), "aws", region="us-east-1")


def test_no_gpu_captured_needs_gpu():
    with pytest.raises(SpecError, match="the capture found no GPU; name the cloud GPU with --gpu"):
        match(manifest(None), "aws", region="us-east-1")
    assert match(manifest(None), "azure", gpu="T4", region="eastus", ssh_public_key=KEY).gpu.model == "T4"


def test_the_written_stack_file_plans_and_shows_its_cost(tmp_path, capsys):
    path = tmp_path / "manifest.json"
    write_manifest(manifest("a100-40gb"), path)
    stack = tmp_path / "Pulumi.migrated.yaml"
    key = tmp_path / "key.pub"
    key.write_text(KEY + "\n")
    assert main(["migrate", "match", str(path), "--cloud", "gcp", "--region", "us-central1", "--ssh-public-key",
                 str(key), "--out", str(stack)]) == 0
    shown = capsys.readouterr().out
    assert "1 x A100 (a2-highgpu-1g) in us-central1: $" in shown and "/h on demand" in shown
    assert main(["plan", str(stack), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["outputs"]["instance_type"] == "a2-highgpu-1g"
    assert planned["outputs"]["region"] == "us-central1"


@pytest.mark.parametrize(("content", "expected"), [
    (None, "no such file; write one with `gpufleet migrate capture --out FILE`"),
    ("{not json", "expected a JSON manifest from `gpufleet migrate capture`"),
    ('{"schema_version": 7}', "`manifest.schema_version`: got 7; expected 1"),
    ('{"schema_version": 1, "created": "x"}', "`manifest.python`"),
])
def test_a_bad_manifest_is_one_message(tmp_path, capsys, content, expected):
    path = tmp_path / "manifest.json"
    if content is not None:
        path.write_text(content)
    assert main(["migrate", "match", str(path), "--cloud", "aws", "--region", "us-east-1",
                 "--out", str(tmp_path / "s.yaml")]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and err.count("\n  - ") == 1


def test_capture_with_a_missing_interpreter_is_one_message(tmp_path, capsys):
    assert main(["migrate", "capture", "--python", str(tmp_path / "nope"), "--out", str(tmp_path / "m.json")]) == 2
    assert "`--python`: got" in capsys.readouterr().err


def test_an_internal_error_is_one_line_with_the_debug_hint(tmp_path, capsys, monkeypatch):
    import gpufleet.migrate.match as match_module

    def broken(*args, **kwargs):
        raise KeyError("A100")

    monkeypatch.setattr(match_module, "match", broken)
    path = tmp_path / "manifest.json"
    write_manifest(manifest("a100-40gb"), path)
    assert main(["migrate", "match", str(path), "--cloud", "gcp", "--region", "us-central1",
                 "--out", str(tmp_path / "s.yaml")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (KeyError: 'A100')" in err and "--debug" in err
