"""Container images in the node's user data: the offline plan shows a stand-in digest and says so in a note; a run with
deploy-time lookups (as under `pulumi up`) writes the digest the registry gave for each tag, the same for every node
group, and a registry that gives none stops the run with the image's name."""

from __future__ import annotations

import contextlib
import re

import pytest

from gpufleet.cloud_init.config import DCGM_EXPORTER_IMAGE
from gpufleet.cloud_init.triton import SYNC_IMAGES, TRITON_ENV_PATH
from gpufleet.deploytime import containers
from gpufleet.deploytime.containers import stand_in_digest
from gpufleet.deploytime.oci import DigestError
from gpufleet.plan import runner
from gpufleet.plan.cli import deploy_time_notes
from gpufleet.plan.runner import run_program
from gpufleet.plan.stackfile import read_stack_config
from gpufleet.plan.userdata import node_user_data
from tests.conftest import cached_plan

TRITON = "nvcr.io/nvidia/tritonserver:25.08-py3"
# What the registry answered for each tag in this run (a recorded-style table; the resolver itself is tested
# against a fake registry in test_oci.py).
RECORDED = {DCGM_EXPORTER_IMAGE: "sha256:" + "d" * 64, TRITON: "sha256:" + "7" * 64,
            SYNC_IMAGES["gcp"]: "sha256:" + "9" * 64}


def node_texts(result) -> list[str]:
    """The GPU nodes' cloud-configs (not the monitoring server's)."""
    return [text for text in node_user_data(result.resources).values() if "GPUFLEET_DCGM_EXPORTER_IMAGE=" in text]


def env_line(text: str, name: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(f"{name}="))


@pytest.fixture
def deploy(monkeypatch):
    """Runs a stack's program with lookups on and the registry's answers from RECORDED; records what was asked."""
    asked: list[str] = []

    def answer(reference: str) -> str:
        asked.append(reference)
        if reference not in RECORDED:
            raise DigestError(f"registry answered HTTP 404 for {reference}")
        return RECORDED[reference]

    containers._pinned.cache_clear()
    monkeypatch.setattr(containers, "tag_digest", answer)
    monkeypatch.setattr(runner, "offline_lookups", contextlib.nullcontext)
    yield lambda stack, **changes: (run_program(stack, {**read_stack_config(stack), "gpufleet:cluster": {
        **read_stack_config(stack)["gpufleet:cluster"], **changes}}), asked)
    containers._pinned.cache_clear()


def test_the_offline_plan_shows_the_stand_in_and_says_it_is_resolved_at_up():
    result = cached_plan(read_stack_config("gcp-train")["gpufleet:cluster"])
    [text] = node_texts(result)
    stand_in = stand_in_digest(DCGM_EXPORTER_IMAGE)
    assert env_line(text, "GPUFLEET_DCGM_EXPORTER_IMAGE") == f"GPUFLEET_DCGM_EXPORTER_IMAGE='{DCGM_EXPORTER_IMAGE}@{stand_in}'"
    assert stand_in not in RECORDED.values() and stand_in == stand_in_digest(DCGM_EXPORTER_IMAGE)  # stable
    # As long and as incompressible as a registry's digest: the plan measures the size `pulumi up` sends.
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", stand_in) and len(set(stand_in[7:])) > 10
    assert any("digest" in note and "pulumi up" in note for note in deploy_time_notes(result))


def test_deploy_writes_each_registry_digest_into_the_user_data(deploy):
    result, asked = deploy("gcp-infer")
    texts = node_texts(result)
    assert texts
    for text in texts:
        assert f"{DCGM_EXPORTER_IMAGE}@{RECORDED[DCGM_EXPORTER_IMAGE]}" in env_line(text, "GPUFLEET_DCGM_EXPORTER_IMAGE")
        triton_env = text[text.index(TRITON_ENV_PATH):]
        assert env_line(triton_env, "GPUFLEET_TRITON_IMAGE") == f"GPUFLEET_TRITON_IMAGE='{TRITON}@{RECORDED[TRITON]}'"
        assert f"@{RECORDED[SYNC_IMAGES['gcp']]}" in env_line(triton_env, "GPUFLEET_TRITON_SYNC_IMAGE")
        assert stand_in_digest(DCGM_EXPORTER_IMAGE) not in text and stand_in_digest(TRITON) not in text
    assert sorted(asked) == sorted(set(asked))  # one registry call per tag, whatever the node groups


def test_a_digest_given_in_the_spec_is_kept_and_not_looked_up(deploy):
    given = "sha256:" + "ab" * 32
    infer = read_stack_config("gcp-infer")["gpufleet:cluster"]
    result, asked = deploy("gcp-infer", inference={**infer["inference"], "triton_image_digest": given})
    [text] = node_texts(result)
    assert f"{TRITON}@{given}" in text and TRITON not in asked


def test_a_registry_without_the_tag_stops_the_run_naming_the_image(deploy):
    RECORDED_WITHOUT = dict(RECORDED)
    del RECORDED_WITHOUT[DCGM_EXPORTER_IMAGE]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("tests.deploytime.test_pinning.RECORDED", RECORDED_WITHOUT)
        with pytest.raises(Exception, match="cannot pin container image .*dcgm-exporter"):
            deploy("gcp-train")
