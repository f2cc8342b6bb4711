"""`gpufleet select` compares every cloud that can run the requirement, even past the row limit."""

import json
from types import SimpleNamespace

from gpufleet.catalog.cli import shown_offers
from gpufleet.plan.cli import main


def offer(cloud: str, name: str):
    return SimpleNamespace(candidate=SimpleNamespace(instance=SimpleNamespace(cloud=cloud, name=name)))


def test_each_missing_cloud_adds_its_best_offer_after_the_limit():
    ranked = [offer("aws", "a1"), offer("aws", "a2"), offer("gcp", "g1"), offer("azure", "z1"), offer("azure", "z2")]
    assert [o.candidate.instance.name for o in shown_offers(ranked, 2)] == ["a1", "a2", "g1", "z1"]
    assert shown_offers(ranked, 0) == ranked


def test_h100_spot_ranks_aws_azure_and_gcp(capsys):
    assert main(["select", "--gpu", "H100", "--gpus-per-node", "8", "--nodes", "2", "--market", "spot", "--json"]) == 0
    offers = json.loads(capsys.readouterr().out)["offers"]
    assert {o["cloud"] for o in offers} == {"aws", "azure", "gcp"}
    for field in ("usd_per_hour", "usd_per_month", "usd_per_gpu_hour", "usd_per_dense_pflop_hour"):
        assert all(o[field] is not None and o[field] > 0 for o in offers), field
