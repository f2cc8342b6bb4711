"""`placement_max_distance` from the spec reaches the GCP compact placement policy, or is refused."""

import pulumi
import pytest

from tests.conftest import plan_spec

A3_MEGA = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 2,
           "accelerator": {"instance_type": "a3-megagpu-8g"}, "market": "spot", "fabric": "auto"}


def test_a3_refuses_max_distance_1():
    with pytest.raises(pulumi.RunError, match=r"`placement_max_distance`: got 1; a3-megagpu-8g does not support"):
        plan_spec({**A3_MEGA, "placement_max_distance": 1})


def test_chosen_distance_reaches_the_policy():
    result = plan_spec({**A3_MEGA, "placement_max_distance": 3})
    policy = next(r for r in result.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "maxTopologyDistance": "CLUSTER"}
    compact = plan_spec({**A3_MEGA, "accelerator": {"instance_type": "a2-highgpu-8g"}, "fabric": "auto",
                         "placement_max_distance": 3})
    policy = next(r for r in compact.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "maxDistance": 3}


@pytest.mark.parametrize("change", [
    {"placement_group": False},
    {"nodes": 1, "accelerator": {"instance_type": "a2-highgpu-8g"}, "fabric": "auto"},  # TCP: one node, no policy
])
def test_distance_without_compact_placement_is_refused_not_dropped(change):
    with pytest.raises(pulumi.RunError, match=r"`placement_max_distance`: got 3; only applies with compact placement"):
        plan_spec({**A3_MEGA, **change, "placement_max_distance": 3})


def test_single_a3_node_keeps_its_distance():
    result = plan_spec({**A3_MEGA, "nodes": 1, "placement_max_distance": 3})
    policy = next(r for r in result.resources if r.type == "gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"]["maxTopologyDistance"] == "CLUSTER"
