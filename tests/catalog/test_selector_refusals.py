"""The selector's catalog refusals that depend on the sanity checks and on zone kinds."""

import pytest

from gpufleet.catalog.selector import select
from gpufleet.spec import SpecError, parse_cluster_spec
from tests.catalog.helpers import catalog, instance, price

SPEC = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az1", "nodes": 2,
        "accelerator": {"instance_type": "p5.48xlarge"}}


def refusal(spec: dict, cat) -> str:
    with pytest.raises(SpecError) as caught:
        select(parse_cluster_spec(spec), cat)
    return "\n".join(str(p) for p in caught.value.problems)


def test_instance_refused_by_the_sanity_checks_says_why():
    cat = catalog([instance(gpus=12)], [price()])
    assert refusal(SPEC, cat) == ("`accelerator.instance_type`: got 'p5.48xlarge'; refused by the catalog's sanity "
                                  "checks: 12 x H100 per node contradicts the GPU's spec: H100 comes 1/2/4/8 to a node")


def test_multi_node_rdma_cluster_refuses_a_local_zone():
    cat = catalog([instance()], [price(), price(zone="use1-atl2-az1")])
    message = refusal({**SPEC, "zone": "use1-atl2-az1"}, cat)
    assert "`zone`: got 'use1-atl2-az1'; is a Local Zone or Wavelength Zone" in message
    assert "'use1-az1'" in message


def test_local_zone_name_is_refused_too():
    cat = catalog([instance()], [price(), price(zone="use1-atl2-az1")])
    assert "is a Local Zone or Wavelength Zone" in refusal({**SPEC, "zone": "us-east-1-atl-2a"}, cat)


def test_single_node_may_use_a_local_zone():
    cat = catalog([instance()], [price(), price(zone="use1-atl2-az1")])
    assert select(parse_cluster_spec({**SPEC, "nodes": 1, "zone": "use1-atl2-az1"}), cat).instance.name == "p5.48xlarge"


def test_sizes_that_need_the_grid_driver_are_never_chosen_for_a_gpu():
    grid = instance(cloud="azure", name="Standard_NV36ads_A10_v5", gpu="A100", gpus=1, memory=40, fabric=None,
                    extra={"gpu_driver": "grid"})
    plain = instance(cloud="azure", name="Standard_NC24ads_A100_v4", gpu="A100", gpus=1, memory=40, fabric=None)
    prices = [price(cloud="azure", name=grid.name, region="eastus", zone="", od=1.0, spot=None),
              price(cloud="azure", name=plain.name, region="eastus", zone="", od=3.0, spot=None)]
    spec = {"cloud": "azure", "region": "eastus", "nodes": 1, "accelerator": {"gpu": "A100", "gpus_per_node": 1}}
    assert select(parse_cluster_spec(spec), catalog([grid, plain], prices)).instance.name == plain.name
