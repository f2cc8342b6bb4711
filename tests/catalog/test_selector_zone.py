"""The selector picks among types offered in the spec's zone, at that zone's price.

Ranking by the cheapest price anywhere in the region chose types the zone does not offer and then refused the zone
(real rows: AWS 8x H200 in apse3-az1, GCP 8x H100 in us-east4-b).
"""


from gpufleet.catalog.selector import select
from gpufleet.spec import parse_cluster_spec
from tests.catalog.helpers import catalog, instance, price

SPEC = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az1", "nodes": 1, "market": "spot",
        "accelerator": {"gpu": "H100", "gpus_per_node": 8}}


def test_a_type_not_offered_in_the_zone_is_not_chosen():
    cat = catalog([instance(name="cheap.48xlarge"), instance(name="here.48xlarge")],
                  [price(name="cheap.48xlarge", region="us-east-2", zone="use2-az2", spot=10.0),
                   price(name="here.48xlarge", region="us-east-2", zone="use2-az1", spot=20.0)])
    assert select(parse_cluster_spec(SPEC), cat).instance.name == "here.48xlarge"


def test_types_are_ranked_by_the_zones_price_not_the_regions_cheapest():
    cat = catalog([instance(name="a.48xlarge"), instance(name="b.48xlarge")],
                  [price(name="a.48xlarge", region="us-east-2", zone="use2-az1", spot=30.0),
                   price(name="a.48xlarge", region="us-east-2", zone="use2-az2", spot=10.0),
                   price(name="b.48xlarge", region="us-east-2", zone="use2-az1", spot=20.0),
                   price(name="b.48xlarge", region="us-east-2", zone="use2-az2", spot=20.0)])
    chosen = select(parse_cluster_spec(SPEC), cat)
    assert (chosen.instance.name, chosen.price.spot) == ("b.48xlarge", 20.0)


def test_a_local_zone_named_by_the_spec_is_used_with_a_warning():
    cat = catalog([instance()], [price(zone="use1-atl2-az1", spot=10.0), price(zone="use1-az4", spot=20.0)])
    spec = parse_cluster_spec({**SPEC, "region": "us-east-1", "zone": "use1-atl2-az1"})
    chosen = select(spec, cat)
    assert chosen.price.spot == 10.0
    assert any("Local Zone" in w and "opted in" in w for w in chosen.warnings)


def test_a_zone_in_a_region_priced_only_as_a_whole_is_used_with_a_warning_naming_the_lookup():
    spec = parse_cluster_spec({"cloud": "gcp", "region": "europe-west1", "zone": "europe-west1-b", "nodes": 1,
                               "market": "on-demand", "accelerator": {"instance_type": "a3-megagpu-8g"}})
    chosen = select(spec)
    [warning] = [w for w in chosen.warnings if "not checked" in w]
    assert "lists no zones" in warning and "'europe-west1-b'" in warning
    assert 'gcloud compute machine-types list --filter="name=a3-megagpu-8g AND zone~^europe-west1-"' in warning
    assert chosen.price.on_demand == 102.19465


def test_a_zone_the_catalog_lists_gets_no_such_warning():
    spec = parse_cluster_spec({"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 1,
                               "market": "on-demand", "accelerator": {"instance_type": "a3-megagpu-8g"}})
    assert not [w for w in select(spec).warnings if "not checked" in w]
