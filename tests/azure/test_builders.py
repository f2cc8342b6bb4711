"""The Azure component's pure builders and rules, called directly (no Pulumi runtime)."""

from __future__ import annotations

from ipaddress import IPv4Network

import pytest

from gpufleet.azure.fabric import accelerated_networking, infiniband_partition
from gpufleet.azure.image import image_problems, image_reference
from gpufleet.azure.network import node_subnet_cidr, parse_subnet_id, usable_addresses
from gpufleet.azure.nodes import ScaleSetPlan, computer_name_prefix, priority_args, scale_set_plans
from gpufleet.azure.rules import spec_problems
from gpufleet.azure.security import exporter_port_ranges, security_rules
from gpufleet.catalog.loader import load_catalog
from gpufleet.catalog.selector import select
from gpufleet.spec import parse_cluster_spec

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw test@example.com"
BASE = {"cloud": "azure", "region": "eastus", "nodes": 2, "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"},
        "access": {"ssh_public_key": KEY}}


def spec_of(**changes):
    return parse_cluster_spec({**BASE, **changes})


def instance(name: str):
    return load_catalog().instance("azure", name)


@pytest.mark.parametrize("name, links, gbps", [("Standard_ND96asr_v4", 8, 200), ("Standard_ND96amsr_A100_v4", 8, 200),
                                              ("Standard_ND96isr_H100_v5", 8, 400), ("Standard_ND96isr_H200_v5", 8, 400)])
def test_nd_sizes_form_an_infiniband_partition_of_one_link_per_gpu(name, links, gbps):
    partition = infiniband_partition(spec_of(), instance(name))
    assert (partition.links, partition.gbps_per_link, partition.gbps_per_node) == (links, gbps, links * gbps)


def test_no_partition_without_infiniband_or_with_fabric_tcp():
    assert infiniband_partition(spec_of(), instance("Standard_NC24ads_A100_v4")) is None
    assert infiniband_partition(spec_of(fabric="tcp"), instance("Standard_ND96isr_H100_v5")) is None
    assert infiniband_partition(spec_of(nodes=1), instance("Standard_ND96isr_H100_v5")) is not None


def test_every_catalog_size_has_accelerated_networking():
    rows = [i for (cloud, _), i in load_catalog().instances.items() if cloud == "azure"]
    assert rows and all(accelerated_networking(row) for row in rows)


def test_catalog_rows_carry_gpus_memory_and_fabric_facts():
    h100 = instance("Standard_ND96isr_H100_v5")
    assert (h100.gpus, h100.gpu_memory_gib, h100.vcpus, h100.memory_gib, h100.nvswitch) == (8, 80, 96, 1900, True)
    t4 = instance("Standard_NC4as_T4_v3")
    assert (t4.gpu, t4.gpus, t4.fabric, t4.infiniband_gbps, t4.nvswitch) == ("T4", 1, None, 0, False)


def test_known_bad_spot_prices_are_missing_not_copied():
    catalog = load_catalog()
    rows = catalog.prices_of("azure", "Standard_ND96isr_H100_v5", "eastus")
    assert [(p.on_demand, p.spot) for p in rows] == [(98.32, None)]
    excluded = catalog.sources["azure"].excluded
    assert any(e.startswith("Standard_ND96isr_H100_v5") for e in excluded)


def test_node_subnet_is_the_first_half_of_the_vnet():
    assert node_subnet_cidr(IPv4Network("10.0.0.0/16")) == IPv4Network("10.0.0.0/17")
    assert usable_addresses(IPv4Network("10.0.0.0/29")) == 3


def test_subnet_ids_name_their_resource_group():
    ref = parse_subnet_id("/subscriptions/s1/resourceGroups/rg-1/providers/Microsoft.Network/virtualNetworks/v/subnets/a")
    assert (ref.subscription, ref.resource_group, ref.vnet, ref.subnet) == ("s1", "rg-1", "v", "a")
    assert parse_subnet_id("subnet-0123") is None
    assert parse_subnet_id("/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v") is None


@pytest.mark.parametrize("kind, expected", [
    ("driver-ready", {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}),
    ("ubuntu-22.04", {"publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy", "sku": "22_04-lts-gen2",
                      "version": "latest"}),
    ("ubuntu-24.04", {"publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "latest"}),
])
def test_image_reference_for_each_kind(kind, expected):
    assert image_reference(spec_of(image={"kind": kind})) == expected


def test_image_pins():
    gallery = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/galleries/x/images/hpc/versions/1.0.0"
    assert image_reference(spec_of(image={"id": gallery})) == {"id": gallery}
    assert image_problems(spec_of(image={"id": gallery})) == []
    assert image_reference(spec_of(image={"id": "a:b:c:1.2"})) == {"publisher": "a", "offer": "b", "sku": "c",
                                                                   "version": "1.2"}
    assert image_problems(spec_of(image={"id": "a:b:c"}))[0].path == "image.id"


def test_security_rules_without_exporters_or_cidrs_keep_only_cluster_and_deny():
    spec = spec_of(node={"exporters": {"dcgm": False, "node": False}})
    assert exporter_port_ranges(spec) == []
    assert [r["name"] for r in security_rules(spec, "asg")] == ["allow-cluster", "deny-all-inbound"]


def test_security_rule_priorities_are_unique_and_deny_comes_last():
    spec = spec_of(access={"ssh_public_key": KEY, "ssh_cidrs": ["10.1.0.0/16"], "monitoring_cidrs": ["10.2.0.0/16"]})
    rules = security_rules(spec, "asg")
    priorities = [r["priority"] for r in rules]
    assert priorities == sorted(set(priorities)) and rules[-1]["access"] == "Deny"


def test_scale_set_plans_per_market():
    assert scale_set_plans(select(spec_of(market="spot"))) == [ScaleSetPlan("nodes", "Spot", 2)]
    mixed = spec_of(accelerator={"instance_type": "Standard_NC24ads_A100_v4"}, nodes=3,
                    market={"type": "mixed", "on_demand_base": 0})
    assert scale_set_plans(select(mixed)) == [ScaleSetPlan("nodes", "Regular", 0), ScaleSetPlan("spot-nodes", "Spot", 3)]


def test_priority_args():
    assert priority_args(ScaleSetPlan("nodes", "Regular", 1), None) == {"priority": "Regular"}
    spot = priority_args(ScaleSetPlan("nodes", "Spot", 1), None)
    assert (spot["priority"], spot["eviction_policy"], spot["billing_profile"].max_price) == ("Spot", "Delete", -1)


def test_computer_name_prefix_is_a_valid_host_name_start():
    assert computer_name_prefix("Azure_Train", "gpufleet", ScaleSetPlan("nodes", "Spot", 1)) == "azure-train-gpufleet-"
    assert computer_name_prefix("dev", "gpufleet", ScaleSetPlan("spot-nodes", "Spot", 1)) == "dev-gpufleet-spot-"


def test_spec_rules_pass_a_good_spec():
    assert spec_problems(spec_of()) == []


@pytest.mark.parametrize("price, refused", [(40.5, False), (0.98765, False), (3.67, False), (0.987654, True)])
def test_max_price_takes_at_most_five_decimals(price, refused):
    problems = spec_problems(spec_of(market={"type": "spot", "spot_max_price_per_hour": price}))
    assert [p.path for p in problems] == (["market.spot_max_price_per_hour"] if refused else [])
