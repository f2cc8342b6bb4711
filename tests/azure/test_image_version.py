"""Azure marketplace images are pinned to the version that is newest when `pulumi up` runs: the offline plan says so,
a run with lookups asks a fake Azure Resource Manager on loopback (with the provider's token and subscription, as
the mocks answer them) and declares the newest version; `image.track: latest` keeps `latest`."""

from __future__ import annotations

import contextlib
import json

import pytest

from gpufleet.azure import image_version
from gpufleet.deploytime import containers
from gpufleet.deploytime.lookups import RESOLVED_AT_DEPLOY
from gpufleet.plan import runner
from gpufleet.plan.calls.azure import PLACEHOLDER_SUBSCRIPTION
from gpufleet.plan.runner import run_program
from tests.azure.test_monitoring_server import ALERTS, SECRETS
from tests.conftest import cached_plan, of_type
from tests.fake_http import LoopbackServer, QuietHandler

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw test@example.com"
TRAIN = {"cloud": "azure", "region": "eastus", "nodes": 2, "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"},
         "market": "spot", "fabric": "infiniband", "access": {"ssh_public_key": KEY, "ssh_cidrs": ["10.250.0.0/26"]},
         "monitoring": {"alerts": ALERTS}}
VMSS = "azure-native:compute:VirtualMachineScaleSet"
VM = "azure-native:compute:VirtualMachine"
# As Azure lists them (not sorted); compared as strings, 22.04.99 or 1.9 would win.
HPC_VERSIONS = ["22.04.202409100", "22.04.202501150", "22.04.99", "22.04.202412110"]
UBUNTU_VERSIONS = ["24.04.202410010", "24.04.202502010"]


RECORDED = {"microsoft-dsvm/artifacttypes/vmimage/offers/ubuntu-hpc/skus/2204": HPC_VERSIONS,
            "Canonical/artifacttypes/vmimage/offers/ubuntu-24_04-lts/skus/server": UBUNTU_VERSIONS}


class FakeArm(QuietHandler):
    """VirtualMachineImages List for the `versions` images (RECORDED per test); other paths 404, a wrong token 401."""

    requests: list[str] = []
    versions: dict[str, list[str]] = {}

    def do_GET(self):
        FakeArm.requests.append(self.path)
        if self.headers.get("Authorization") != "Bearer offline-plan-token":
            return self._send(401, json.dumps({"error": {"code": "InvalidAuthenticationToken"}}))
        prefix = f"/subscriptions/{PLACEHOLDER_SUBSCRIPTION}/providers/Microsoft.Compute/locations/eastus/publishers/"
        path, _, query = self.path.partition("?")
        image = path.removeprefix(prefix).removesuffix("/versions")
        if not path.startswith(prefix) or image not in self.versions or "api-version=" not in query:
            return self._send(404, json.dumps({"error": {"code": "NotFound"}}))
        self._send(200, json.dumps([{"location": "eastus", "name": name, "id": f"{path}/{name}"}
                                    for name in self.versions[image]]))


@pytest.fixture
def arm(monkeypatch):
    """A run of the program with deploy-time lookups on, against the fake ARM; yields the run function."""
    server = LoopbackServer(FakeArm).start()
    FakeArm.requests, FakeArm.versions = [], dict(RECORDED)
    image_version._listed.cache_clear()
    monkeypatch.setattr(image_version, "ARM_ENDPOINT", server.url)
    monkeypatch.setattr(runner, "offline_lookups", contextlib.nullcontext)  # as under `pulumi up`
    monkeypatch.setattr(containers, "tag_digest", lambda reference: "sha256:" + "c" * 64)  # no registry here
    containers._pinned.cache_clear()
    try:
        yield lambda spec: run_program("test", {"gpufleet:cluster": spec, **SECRETS})
    finally:
        server.close()
        image_version._listed.cache_clear()
        containers._pinned.cache_clear()


def image_of(result, token: str, name: str) -> dict:
    resource = next(r for r in of_type(result, token) if r.name == name)
    if token == VMSS:
        return resource.inputs["virtualMachineProfile"]["storageProfile"]["imageReference"]
    return resource.inputs["storageProfile"]["imageReference"]


def test_offline_plan_shows_the_versions_will_be_resolved_at_deploy():
    result = cached_plan(TRAIN, SECRETS)
    assert image_of(result, VMSS, "gpufleet-nodes")["version"] == RESOLVED_AT_DEPLOY
    assert image_of(result, VM, "gpufleet-monitoring-server")["version"] == RESOLVED_AT_DEPLOY


def test_deploy_pins_the_newest_listed_version_in_the_scale_set_and_server(arm):
    result = arm(TRAIN)
    assert image_of(result, VMSS, "gpufleet-nodes") == {
        "publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "22.04.202501150"}
    assert image_of(result, VM, "gpufleet-monitoring-server") == {
        "publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "24.04.202502010"}
    assert len(FakeArm.requests) == 2, FakeArm.requests  # one call per image, with the provider's credentials


def test_the_same_listing_declares_the_same_inputs(arm):
    first = arm(TRAIN)
    image_version._listed.cache_clear()
    FakeArm.versions["microsoft-dsvm/artifacttypes/vmimage/offers/ubuntu-hpc/skus/2204"] = HPC_VERSIONS[::-1]
    second = arm(TRAIN)  # same versions, listed in another order
    assert [r.inputs for r in first.resources] == [r.inputs for r in second.resources]


def test_track_latest_keeps_latest_and_makes_no_lookup(arm):
    result = arm({**TRAIN, "image": {"track": "latest"}})
    assert image_of(result, VMSS, "gpufleet-nodes")["version"] == "latest"
    assert not any("/ubuntu-hpc/" in path for path in FakeArm.requests)


def test_an_exact_version_in_image_id_is_kept(arm):
    result = arm({**TRAIN, "image": {"id": "microsoft-dsvm:ubuntu-hpc:2404:24.04.2025010101"}})
    assert image_of(result, VMSS, "gpufleet-nodes")["version"] == "24.04.2025010101"


def test_a_listing_azure_refuses_fails_the_run_naming_the_image(arm):
    FakeArm.versions = {}
    with pytest.raises(Exception) as caught:
        arm(TRAIN)
    assert "microsoft-dsvm:ubuntu-hpc:2204" in str(caught.value) and "HTTP 404" in str(caught.value)


@pytest.mark.parametrize("versions, newest", [
    (["1.9.0", "1.10.0"], "1.10.0"),
    (["22.04.202501150", "22.04.99"], "22.04.202501150"),
    (["2204.2024.1001"], "2204.2024.1001"),
])
def test_newest_version_compares_parts_as_numbers(versions, newest):
    assert image_version.newest_version(versions) == newest



def test_the_plan_note_says_the_version_is_pinned_at_pulumi_up():
    from gpufleet.plan.cli import deploy_time_notes
    notes = deploy_time_notes(cached_plan(TRAIN, SECRETS))
    assert any("Azure marketplace image version" in note and "pulumi up" in note for note in notes)
