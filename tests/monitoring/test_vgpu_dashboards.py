"""Dashboards of a vGPU slice cluster: a panel of a metric the GRID guest driver does not give a slice says so
instead of staying empty (or reading a made-up 0); panels of what a slice reads stay as they are; whole-GPU
clusters' dashboards are unchanged."""

from __future__ import annotations

import json

from gpufleet.catalog import load_catalog
from gpufleet.monitoring.dashboards import SLICE_NO_VALUE, NodePricing, dashboards
from gpufleet.monitoring.outputs import stack_dashboards
from gpufleet.pipeline import plan_node_groups
from gpufleet.spec import parse_cluster_spec

PRICING = NodePricing(usd_per_node_hour=0.475)


def panels(boards: dict[str, str]) -> dict[tuple[str, str], dict]:
    return {(name, p["title"]): p for name, text in boards.items() for p in json.loads(text)["panels"]
            if p.get("type") != "row"}


def no_value(panel: dict) -> str | None:
    return panel.get("fieldConfig", {}).get("defaults", {}).get("noValue")


def test_unreadable_panels_say_so_and_readable_ones_do_not():
    sliced = panels(dashboards(PRICING, 1, vgpu_slice=True))
    overview = "gpufleet-overview.json"
    for title in ("GPU utilisation", "Tensor core activity", "Power", "Temperature", "Idle GPU spend (USD/h)"):
        assert no_value(sliced[(overview, title)]) == SLICE_NO_VALUE, title
        assert "vGPU slice" in sliced[(overview, title)]["description"]
    for title in ("GPU memory used", "Last XID per GPU", "Exporters down", "NIC throughput", "GPUs reporting"):
        assert no_value(sliced[(overview, title)]) is None, title
    assert no_value(sliced[("gpufleet-node-jobs.json", "GPU memory used")]) is None


def test_a_slice_panel_shows_no_made_up_zero_and_counts_gpus_by_memory():
    sliced = panels(dashboards(PRICING, 1, vgpu_slice=True))
    idle = sliced[("gpufleet-overview.json", "Idle GPU spend (USD/h)")]["targets"][0]["expr"]
    assert "vector(0)" not in idle
    reporting = sliced[("gpufleet-overview.json", "GPUs reporting")]["targets"][0]["expr"]
    assert "DCGM_FI_DEV_FB_USED" in reporting and "GPU_TEMP" not in reporting


def test_whole_gpu_dashboards_are_unchanged():
    whole = dashboards(PRICING, 1)
    assert SLICE_NO_VALUE not in "".join(whole.values())
    assert dashboards(PRICING, 1, vgpu_slice=False) == whole


def test_a_slice_stack_gets_slice_dashboards():
    spec = parse_cluster_spec({"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 1,
                               "accelerator": {"instance_type": "g6f.xlarge"}, "image": {"kind": "ubuntu-22.04"}})
    boards = stack_dashboards(plan_node_groups(spec, load_catalog()))
    assert SLICE_NO_VALUE in boards["gpufleet-overview.json"]
