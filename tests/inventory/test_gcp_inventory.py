"""The generated GCP inventory, read by the real `google.cloud.gcp_compute` plugin (`ansible-inventory --list`). Its
API address is fixed in the plugin, so the test answers for Google's hosts through a loopback HTTPS proxy with a
throwaway CA (tests/inventory/tls_proxy.py): the plugin sends its own filter and token, and gets API-shaped records
of the stack's nodes, its monitoring server, another stack's node, the same stack name from another Pulumi project,
a stopped node and an unlabelled VM. The inventory file is used as written; only application default credentials
point at a test user whose token the proxy grants.

Not covered offline: that the live API reads the hyphenated label keys in `labels.gpufleet-stack = ...` as this fake
does, and the IAP connection itself (`gcloud compute ssh --tunnel-through-iap`).
"""

from __future__ import annotations

import json

import pytest

from gpufleet.plan.cli import main
from tests.inventory.ansible_tools import ROOT, ansible_env, group_hosts, inventory_list
from tests.inventory.gcp_api import instance, responder
from tests.inventory.tls_proxy import ApiProxy

pytest.importorskip("google.auth", reason="the gcp_compute plugin needs google-auth (requirements-dev.txt)")

PROJECT, ZONE, STACK = "gpufleet-test-project", "us-central1-a", "gcp-dev"
OURS, THEIRS = "gpufleet-gcp-dev-8f660c", "gpufleet-gcp-dev-1e56e2"  # gcp.nodes.base_instance_name per project
LABELS = {"gpufleet-stack": STACK, "gpufleet-component": "gcpgpucluster"}


def world() -> dict[str, dict]:
    def node(name, stack=STACK, status="RUNNING", role="node"):
        return instance(PROJECT, ZONE, name, "g2-standard-8", {**LABELS, "gpufleet-stack": stack,
                                                                 "gpufleet-role": role}, status, f"{OURS}-nodes")
    return {
        f"{OURS}-a1b2": node(f"{OURS}-a1b2"),
        f"{OURS}-c3d4": node(f"{OURS}-c3d4"),
        "gpufleet-gcp-dev-monitoring": instance(PROJECT, ZONE, "gpufleet-gcp-dev-monitoring", "e2-medium",
                                                {**LABELS, "gpufleet-role": "monitoring"}),
        "gpufleet-gcp-train-9a8b7c-e5f6": node("gpufleet-gcp-train-9a8b7c-e5f6", stack="gcp-train"),
        f"{THEIRS}-g7h8": node(f"{THEIRS}-g7h8"),
        f"{OURS}-dead": node(f"{OURS}-dead", status="TERMINATED"),
        "someone-elses-vm": instance(PROJECT, ZONE, "someone-elses-vm", "n2-standard-4", {}),
    }


@pytest.fixture(scope="module")
def gcp(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gcp-inventory")
    proxy = ApiProxy(tmp, ("www.googleapis.com", "oauth2.googleapis.com"),
                     responder(PROJECT, list(world().values()))).start()
    stack_file = tmp / f"Pulumi.{STACK}.yaml"
    original = (ROOT / "stacks" / f"Pulumi.{STACK}.yaml").read_text()
    stack_file.write_text(original.replace("config:\n", f"config:\n  gcp:project: {PROJECT}\n", 1))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        assert main(["inventory", str(stack_file), "--out", str(tmp / "inventory")]) == 0
    user = tmp / "adc.json"  # an `authorized_user` credential, as `gcloud auth application-default login` writes
    user.write_text(json.dumps({"type": "authorized_user", "client_id": "test", "client_secret": "test",
                                "refresh_token": "test"}))
    env = ansible_env(tmp, HTTPS_PROXY=proxy.url, https_proxy=proxy.url, NO_PROXY="", no_proxy="",
                      REQUESTS_CA_BUNDLE=str(proxy.ca_bundle), GOOGLE_APPLICATION_CREDENTIALS=str(user),
                      CLOUDSDK_CONFIG=str(tmp / "gcloud"))
    listing = inventory_list(tmp / "inventory" / f"{STACK}.gcp_compute.yml", env)
    yield listing, proxy.requests
    proxy.close()


def test_the_plugin_asks_for_the_stacks_running_instances(gcp):
    _listing, requests = gcp
    [listed] = [r for r in requests if r["host"] == "www.googleapis.com"]
    assert "filter=%28labels.gpufleet-stack+%3D+gcp-dev%29+%28labels.gpufleet-component+%3D+gcpgpucluster%29+" \
           "%28status+%3D+RUNNING%29" in listed["path"]


def test_the_stacks_nodes_and_monitoring_server_come_back_in_their_groups(gcp):
    listing, _requests = gcp
    assert group_hosts(listing, "gpu_nodes") == {f"{OURS}-a1b2", f"{OURS}-c3d4"}
    assert group_hosts(listing, "monitoring_server") == {"gpufleet-gcp-dev-monitoring"}
    assert group_hosts(listing, "slurm_controller") == set()
    hosts = set(listing["_meta"]["hostvars"])
    assert not hosts & {"gpufleet-gcp-train-9a8b7c-e5f6", f"{OURS}-dead", "someone-elses-vm"}
    # Same stack name, same labels, another Pulumi project: listed (labels cannot tell), but never a GPU node here.
    assert f"{THEIRS}-g7h8" not in group_hosts(listing, "gpu_nodes")


def test_hosts_are_reached_through_iap_and_carry_the_node_facts(gcp):
    listing, _requests = gcp
    node = listing["_meta"]["hostvars"][f"{OURS}-a1b2"]
    assert node["ansible_connection"] == "google.cloud.iap"
    assert (node["ansible_gcloud_host"], node["ansible_gcloud_zone"], node["ansible_gcloud_project"]) == (
        f"{OURS}-a1b2", ZONE, PROJECT)
    assert (node["gpufleet_cloud"], node["gpufleet_instance_type"], node["gpufleet_fabric"],
            node["gpufleet_node_group"]) == ("gcp", "g2-standard-8", "tcp", f"{OURS}-nodes")
    server = listing["_meta"]["hostvars"]["gpufleet-gcp-dev-monitoring"]
    assert (server["ansible_connection"], server["gpufleet_fabric"]) == ("google.cloud.iap", "none")
