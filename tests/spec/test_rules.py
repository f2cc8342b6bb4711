"""Cross-field rules, each with a test that fails it (R7)."""

import pytest

from gpufleet.spec import SpecError, parse_cluster_spec
from gpufleet.spec.rules import aws_zone_id_prefix

BASE = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2, "accelerator": {"gpu": "H100"}}


def problem(raw: dict) -> str:
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec(raw)
    return "\n".join(str(p) for p in caught.value.problems)


def test_ssh_from_anywhere_needs_explicit_opt_in():
    message = problem({**BASE, "access": {"ssh_cidrs": ["203.0.113.0/24", "0.0.0.0/0"]}})
    assert message.startswith("`access.ssh_cidrs[1]`: got '0.0.0.0/0'; 0.0.0.0/0 opens SSH to the internet")
    assert "allow_ssh_from_anywhere" in message


def test_ssh_from_anywhere_with_opt_in_is_accepted():
    spec = parse_cluster_spec({**BASE, "access": {"ssh_cidrs": ["0.0.0.0/0"], "allow_ssh_from_anywhere": True}})
    assert str(spec.access.ssh_cidrs[0]) == "0.0.0.0/0"


@pytest.mark.parametrize("zone", ["us-west-2a", "use1-az2", "us-east-2", "us-east-2-a"])
def test_zone_outside_region_is_refused(zone):
    assert problem({**BASE, "zone": zone}).startswith(f"`zone`: got '{zone}'; expected a zone of region 'us-east-2'")


@pytest.mark.parametrize("zone", ["us-east-2b", "use2-az3"])
def test_zone_name_or_id_in_region_is_accepted(zone):
    assert parse_cluster_spec({**BASE, "zone": zone}).zone == zone


def test_zone_is_required_on_aws():
    raw = {k: v for k, v in BASE.items() if k != "zone"}
    assert problem(raw).startswith("`zone`: got None; required on aws")


def test_gcp_zone_must_be_in_region():
    raw = {**BASE, "cloud": "gcp", "region": "us-central1", "zone": "us-east1-b"}
    assert "`zone`: got 'us-east1-b'; expected a zone of region 'us-central1'" in problem(raw)


def test_azure_zone_is_a_number():
    raw = {**BASE, "cloud": "azure", "region": "eastus", "zone": "eastus-1"}
    assert "expected an Azure zone number" in problem(raw)


def test_fabric_of_another_cloud_is_refused():
    assert problem({**BASE, "fabric": "infiniband"}).startswith(
        "`fabric`: got 'infiniband'; expected one of 'auto', 'tcp', 'efa' on aws")


def test_accelerator_needs_gpu_or_instance_type():
    assert problem({**BASE, "accelerator": {}}).startswith("`accelerator`: got {}; set `gpu`")


@pytest.mark.parametrize("market, path", [
    ({"type": "mixed", "on_demand_base": 2}, "market.on_demand_base"),
    ({"type": "spot", "on_demand_base": 1}, "market.on_demand_base"),
    ({"type": "spot", "capacity_reservation_id": "cr-1"}, "market.capacity_reservation_id"),
    ({"type": "on-demand", "capacity_block": True}, "market.capacity_block"),
    ({"type": "on-demand", "spot_max_price_per_hour": 10.0}, "market.spot_max_price_per_hour"),
])
def test_market_fields_must_fit_the_market_type(market, path):
    assert problem({**BASE, "market": market}).startswith(f"`{path}`")


def test_reserved_tag_prefixes_are_refused():
    assert problem({**BASE, "tags": {"aws:owner": "me"}}).startswith("`tags.aws:owner`")


@pytest.mark.parametrize("region, prefix", [("us-east-1", "use1"), ("ap-northeast-1", "apne1"), ("eu-central-1", "euc1")])
def test_aws_zone_id_prefix(region, prefix):
    assert aws_zone_id_prefix(region) == prefix


def test_placement_distance_only_applies_to_gcp():
    assert problem({**BASE, "placement_max_distance": 2}).startswith(
        "`placement_max_distance`: got 2; only applies to gcp compact placement")
