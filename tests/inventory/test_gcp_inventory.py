"""The generated GCP inventory, read by the real `google.cloud.gcp_compute` plugin (`ansible-inventory --list`). Its
API address is fixed in the plugin, so the test answers for Google's hosts through a loopback HTTPS proxy with a
throwaway CA (tests/inventory/tls_proxy.py): the plugin sends its own filter and token, and gets API-shaped records
of the stack's nodes, its monitoring server, another stack's node, the same stack name from another Pulumi project,
a stopped node and an unlabelled VM. The inventory file is used as written; only application default credentials
point at a test user whose token the proxy grants.

A stack with two node groups (tests/inventory/grouped_stacks.py): instances named, labelled and created by the
managed groups as its plan declares come back in `gpu_nodes` and each in its `node_group_<group>`, with the group's
name, fabric and fleet; the same stack name's group of another project stays out.

Not covered offline: that the live API reads the hyphenated label keys in `labels.gpufleet-stack = ...` as this fake
does, and the IAP connection itself (`gcloud compute ssh --tunnel-through-iap`).
"""

from __future__ import annotations

import json

import pytest

from gpufleet.plan.cli import main
from tests.inventory.ansible_tools import ROOT, ansible_env, group_hosts, inventory_list
from tests.inventory.gcp_api import instance, responder
from tests.inventory.grouped_stacks import CLUSTERS, GCP_PROJECT, declared, planned, stack_of, write_stack
from tests.inventory.tls_proxy import ApiProxy

# The real plugin in `ansible-inventory` subprocesses against a stand-in API on loopback (2 to 6 s of CPU a
# module): part of `.ci/run`'s slow run, so that the default run stays under a minute on 2 cores.
pytestmark = pytest.mark.slow

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


TEAM_ZONE = CLUSTERS["gcp"]["zone"]


def team_world() -> dict[str, dict]:
    """The two-group stack's nodes as each managed group creates them (its base instance name, the template's
    labels, `created-by`), its monitoring server as planned, and a node of the same stack name and group in another
    Pulumi project (another cluster hash in its name)."""
    team = planned("gcp")
    records = {}
    for group, suffixes in (("train", ("a1b2", "c3d4")), ("eval-small", ("e5f6",))):
        fleet = team["outputs"]["node_groups"][group]["fleet_name"]
        manager = declared(team, "gcp:compute/instanceGroupManager:InstanceGroupManager", fleet)
        labels = declared(team, "gcp:compute/instanceTemplate:InstanceTemplate", f"gpufleet-{group}-template")["labels"]
        machine = team["outputs"]["node_groups"][group]["instance_type"]
        for suffix in suffixes:
            name = f"{manager['baseInstanceName']}-{suffix}"
            records[name] = instance(GCP_PROJECT, TEAM_ZONE, name, machine, labels, group=fleet)
    server = declared(team, "gcp:compute/instance:Instance", "gpufleet-monitoring-server")
    records[server["name"]] = instance(GCP_PROJECT, TEAM_ZONE, server["name"], "e2-medium", server["labels"])
    elsewhere = f"gpufleet-{stack_of('gcp')}-0a0b0c-train-ffff"
    records[elsewhere] = instance(GCP_PROJECT, TEAM_ZONE, elsewhere, "a3-megagpu-8g",
                                  {**LABELS, "gpufleet-stack": stack_of("gcp"), "gpufleet-role": "node",
                                   "gpufleet-node-group": "train"}, group="gpufleet-train-nodes")
    return records


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gcp-team-inventory")
    records = team_world()
    proxy = ApiProxy(tmp, ("www.googleapis.com", "oauth2.googleapis.com"),
                     responder(GCP_PROJECT, list(records.values()))).start()
    outputs = tmp / "outputs.json"
    outputs.write_text(json.dumps(planned("gcp")["outputs"]))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        assert main(["inventory", str(write_stack(tmp, "gcp")), "--outputs", str(outputs),
                     "--out", str(tmp / "inventory")]) == 0
    user = tmp / "adc.json"
    user.write_text(json.dumps({"type": "authorized_user", "client_id": "test", "client_secret": "test",
                                "refresh_token": "test"}))
    env = ansible_env(tmp, HTTPS_PROXY=proxy.url, https_proxy=proxy.url, NO_PROXY="", no_proxy="",
                      REQUESTS_CA_BUNDLE=str(proxy.ca_bundle), GOOGLE_APPLICATION_CREDENTIALS=str(user),
                      CLOUDSDK_CONFIG=str(tmp / "gcloud"))
    listing = inventory_list(tmp / "inventory" / f"{stack_of('gcp')}.gcp_compute.yml", env)
    proxy.close()
    return records, listing


def hosts_of(records: dict[str, dict], group: str) -> set[str]:
    return {name for name, record in records.items() if record["labels"].get("gpufleet-node-group") == group
            and "0a0b0c" not in name}


def test_each_node_group_is_a_group_and_every_groups_nodes_are_gpu_nodes(team):
    records, listing = team
    train, small = hosts_of(records, "train"), hosts_of(records, "eval-small")
    assert len(train) == 2 and len(small) == 1
    assert group_hosts(listing, "node_group_train") == train
    assert group_hosts(listing, "node_group_eval_small") == small
    assert group_hosts(listing, "gpu_nodes") == train | small
    assert group_hosts(listing, "monitoring_server") == {"gpufleet-gcp-two-monitoring"}
    assert not {host for group in ("gpu_nodes", "node_group_train") for host in group_hosts(listing, group)
                if "0a0b0c" in host}


def test_each_node_carries_its_own_groups_name_fabric_and_fleet(team):
    records, listing = team
    hostvars = listing["_meta"]["hostvars"]
    fleets = {group: value["fleet_name"] for group, value in planned("gcp")["outputs"]["node_groups"].items()}
    for host in hosts_of(records, "train"):
        assert (hostvars[host]["gpufleet_node_group"], hostvars[host]["gpufleet_instance_type"],
                hostvars[host]["gpufleet_fabric"], hostvars[host]["gpufleet_fleet"]) == (
            "train", "a3-megagpu-8g", "tcpxo", fleets["train"])
    [small] = hosts_of(records, "eval-small")
    assert (hostvars[small]["gpufleet_node_group"], hostvars[small]["gpufleet_instance_type"],
            hostvars[small]["gpufleet_fabric"], hostvars[small]["gpufleet_fleet"]) == (
        "eval-small", "g2-standard-8", "tcp", fleets["eval-small"])
    server = hostvars["gpufleet-gcp-two-monitoring"]
    assert (server["gpufleet_node_group"], server["gpufleet_fabric"], server["gpufleet_fleet"]) == ("", "none", "")
