"""The pure GPU network layout builders, straight from the catalog rows (no Pulumi)."""

from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Network

import pytest

from gpufleet.catalog.loader import load_catalog
from gpufleet.gcp.fabric import GVNIC, MRDMA, nic_layout, subnet_cidrs, vpc_layout


def row(name: str):
    return load_catalog().instance("gcp", name)


class TestVpcLayout:
    @pytest.mark.parametrize("name, fabric, vpcs, nics, gpu_mtu", [
        ("a2-highgpu-8g", None, ["net"], 1, None),
        ("g2-standard-8", None, ["net"], 1, None),
        ("a3-highgpu-8g", "tcpx", ["net"] + [f"gpu-net-{i}" for i in range(4)], 5, 8244),
        ("a3-megagpu-8g", "tcpxo", ["net"] + [f"gpu-net-{i}" for i in range(8)], 9, 8244),
        ("a3-ultragpu-8g", "roce", ["net", "net-1", "rdma-net"], 10, 8896),
        ("a4-highgpu-8g", "roce", ["net", "net-1", "rdma-net"], 10, 8896),
    ])
    def test_vpcs_and_nic_count_per_family(self, name, fabric, vpcs, nics, gpu_mtu):
        layout = vpc_layout(row(name), fabric)
        assert [v.role for v in layout] == vpcs
        assert len(nic_layout(layout)) == nics
        if gpu_mtu:
            assert {v.mtu for v in layout if v.kind in ("gpu", "rdma")} == {gpu_mtu}

    def test_a3_gpu_vpcs_have_one_gvnic_subnet_each_and_allow_firewalls(self):
        gpu = [v for v in vpc_layout(row("a3-megagpu-8g"), "tcpxo") if v.kind == "gpu"]
        assert all(len(v.subnet_roles) == 1 and v.nic_type == GVNIC and v.firewall_allowed for v in gpu)
        assert all(v.mtu == 8244 for v in vpc_layout(row("a3-highgpu-8g"), "tcpx"))

    def test_roce_vpc_has_eight_subnets_mrdma_nics_a_profile_and_no_firewall(self):
        layout = vpc_layout(row("a4-highgpu-8g"), "roce")
        rdma = layout[-1]
        assert rdma.subnet_roles == tuple(f"rdma-subnet-{i}" for i in range(8))
        assert rdma.nic_type == MRDMA and rdma.network_profile and not rdma.firewall_allowed
        assert all(v.nic_type == GVNIC and not v.network_profile for v in layout[:-1])

    def test_nic0_is_the_primary_gvnic_and_mrdma_nics_come_last(self):
        nics = nic_layout(vpc_layout(row("a3-ultragpu-8g"), "roce"))
        assert (nics[0].vpc_role, nics[0].subnet_role, nics[0].nic_type) == ("net", "subnet", GVNIC)
        assert [n.nic_type for n in nics] == [GVNIC, GVNIC] + [MRDMA] * 8

    def test_single_node_a3_uses_only_the_primary_nic(self):
        assert [v.role for v in vpc_layout(row("a3-megagpu-8g"), None)] == ["net"]

    def test_row_with_a_fabric_but_no_gpu_nics_is_a_data_error(self):
        broken = replace(row("a3-highgpu-8g"), gpu_nics=0)
        with pytest.raises(ValueError, match="gpu_nics"):
            vpc_layout(broken, "tcpx")


class TestSubnetCidrs:
    def test_primary_takes_the_spec_range_and_gpu_subnets_overlap_nothing(self):
        layout = vpc_layout(row("a4-highgpu-8g"), "roce")
        cidrs = subnet_cidrs(IPv4Network("10.0.0.0/16"), layout)
        assert cidrs["subnet"] == IPv4Network("10.0.0.0/16")
        ranges = list(cidrs.values())
        assert len(ranges) == 10
        assert not any(a.overlaps(b) for i, a in enumerate(ranges) for b in ranges[i + 1:])

    def test_gpu_subnets_skip_a_primary_range_inside_the_first_pool(self):
        cidrs = subnet_cidrs(IPv4Network("172.16.0.0/12"), vpc_layout(row("a3-megagpu-8g"), "tcpxo"))
        assert all(not c.overlaps(IPv4Network("172.16.0.0/12")) for role, c in cidrs.items() if role != "subnet")

    def test_gpu_subnets_hold_the_largest_cluster(self):
        cidrs = subnet_cidrs(IPv4Network("10.0.0.0/16"), vpc_layout(row("a3-highgpu-8g"), "tcpx"))
        assert all(c.num_addresses - 4 >= 4096 for c in cidrs.values())
