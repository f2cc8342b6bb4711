"""A stack with two node groups per cloud, for the inventory tests: `train` (the cluster's RDMA type) and
`eval-small` (a small single-GPU type, TCP), the second with a hyphen so its Ansible group shows the rewrite.

The tests plan each stack offline, as `gpufleet plan --json` does, and take from the plan what the cloud would hold:
the fleets' names (`node_groups` output, passed to `gpufleet inventory --outputs`) and the tags or labels gpufleet
declares on each group's nodes, so the fake cloud's records carry exactly what gpufleet declares.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import yaml

from gpufleet.plan.render import plan_json
from gpufleet.plan.runner import run_program
from tests.inventory.ansible_tools import ROOT

SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw you@example.com"
GROUPS = {"train": {"nodes": 2, "market": "spot"}, "eval-small": {"nodes": 1}}
SMALL = {"aws": "g6e.xlarge", "gcp": "g2-standard-8", "azure": "Standard_NC24ads_A100_v4"}
CLUSTERS = {
    "aws": {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "accelerator": {"instance_type": "p5.48xlarge"}},
    "gcp": {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a",
            "accelerator": {"instance_type": "a3-megagpu-8g"}},
    "azure": {"cloud": "azure", "region": "eastus", "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"},
              "access": {"ssh_public_key": SSH_KEY}},
}
GCP_PROJECT = "gpufleet-test-project"


def stack_of(cloud: str) -> str:
    return f"{cloud}-two"


def stack_config(cloud: str) -> dict:
    groups = {name: dict(group) for name, group in GROUPS.items()}
    groups["eval-small"]["accelerator"] = {"instance_type": SMALL[cloud]}
    config = {"gpufleet:cluster": {**CLUSTERS[cloud], "fabric": "auto", "node_groups": groups}}
    return {"gcp:project": GCP_PROJECT, **config} if cloud == "gcp" else config


def write_stack(folder: Path, cloud: str) -> Path:
    path = folder / f"Pulumi.{stack_of(cloud)}.yaml"
    path.write_text(yaml.safe_dump({"config": stack_config(cloud)}, sort_keys=False))
    return path


def planned(cloud: str) -> dict:
    """The stack's plan document (`gpufleet plan --json`): {"resources": [...], "outputs": {...}}."""
    return json.loads(_planned(cloud))


@cache
def _planned(cloud: str) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        return plan_json(run_program(stack_of(cloud), stack_config(cloud)))


def declared(document: dict, resource_type: str, name: str) -> dict:
    """The inputs of the plan's resource of that type and name."""
    [inputs] = [r["inputs"] for r in document["resources"] if r["type"] == resource_type and r["name"] == name]
    return inputs
