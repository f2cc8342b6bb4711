"""Plan-time refusals for `node`: each rule has a test that fails it, naming the field path, value and fix."""

from __future__ import annotations

from datetime import date

import pytest

from gpufleet.catalog.loader import load_catalog
from gpufleet.spec import SpecError
from gpufleet.spec.node_rules import DRIVER_BRANCHES, check_node_software, min_driver_branch

from .conftest import AZURE_NC_A100, GCP_G2, aws_spec, selection_for

TODAY = date(2026, 12, 2)


def aws_selection(accelerator=None, nodes=2, node=None):
    """A Selection built without the selector, so the rules under test are not already applied."""
    instance_type = (accelerator or {}).get("instance_type", "p5.48xlarge")
    return selection_for(load_catalog().instance("aws", instance_type), nodes=nodes, node=node)


def problems(selection, today=TODAY):
    return [(p.path, p.value) for p in check_node_software(selection, today)]


def messages(selection, today=TODAY):
    return [str(p) for p in check_node_software(selection, today)]


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p4d.24xlarge", "p6-b200.48xlarge", "g6e.xlarge"])
def test_defaults_pass_on_every_aws_shape(instance_type):
    assert problems(aws_selection(accelerator={"instance_type": instance_type})) == []


def test_cuda_13_needs_branch_580():
    selection = aws_selection(node={"driver": {"branch": "535"}, "cuda": "13.0"})
    assert ("node.cuda", "13.0") in problems(selection, date(2026, 1, 1))
    assert any("CUDA 13.x needs driver branch 580 or newer" in m for m in messages(selection, date(2026, 1, 1)))


def test_cuda_12_runs_on_535_before_its_end_of_life():
    assert problems(aws_selection(node={"driver": {"branch": "535"}, "cuda": "12.8"}), date(2026, 1, 1)) == []


def test_unknown_cuda_major_is_refused():
    assert problems(aws_selection(node={"cuda": "10.2"})) == [("node.cuda", "10.2")]


def test_branch_past_end_of_life_is_refused_with_the_supported_ones():
    selection = aws_selection(node={"driver": {"branch": "535"}, "cuda": "12.8"})
    assert problems(selection) == [("node.driver.branch", "535")]
    assert "reached end of life on 2026-06-30; use a supported branch: 580, 595, 620" in messages(selection)[0]


def test_new_feature_branch_end_of_life_comes_from_the_table():
    assert problems(aws_selection(node={"driver": {"branch": "610"}}), date(2026, 8, 1)) == []
    assert problems(aws_selection(node={"driver": {"branch": "610"}}), date(2026, 9, 1)) == [
        ("node.driver.branch", "610")]


@pytest.mark.parametrize("branch, why", [("570", "no longer supported"), ("999", "not a known driver branch")])
def test_unlisted_branches_are_refused(branch, why):
    assert why in messages(aws_selection(node={"driver": {"branch": branch}}))[0]


def test_proprietary_modules_on_blackwell_are_refused():
    selection = aws_selection(accelerator={"instance_type": "p6-b200.48xlarge"},
                              node={"driver": {"flavor": "proprietary"}})
    assert problems(selection) == [("node.driver.flavor", "proprietary")]
    assert "requires the open kernel modules" in messages(selection)[0]


@pytest.mark.parametrize("cloud, instance_type", [("gcp", "g4-standard-48"), ("gcp", "g4-standard-384"),
                                                   ("aws", "g7e.48xlarge")])
def test_rtx_pro_6000_defaults_pass_and_proprietary_modules_are_refused(cloud, instance_type):
    row = load_catalog().instance(cloud, instance_type)
    assert problems(selection_for(row)) == []
    assert problems(selection_for(row, node={"driver": {"flavor": "proprietary"}})) == [
        ("node.driver.flavor", "proprietary")]


def test_proprietary_modules_on_hopper_are_allowed():
    assert problems(aws_selection(node={"driver": {"flavor": "proprietary"}})) == []


def test_mig_on_a_gpu_without_mig_is_refused():
    selection = aws_selection(accelerator={"instance_type": "g6e.xlarge"}, nodes=1, node={"mig": {"profiles": ["1g.12gb"]}})
    assert problems(selection) == [("node.mig.profiles", ["1g.12gb"])]
    assert "L40S does not support MIG" in messages(selection)[0]


def test_mig_profile_of_another_gpu_is_refused_with_the_valid_ones():
    selection = aws_selection(node={"mig": {"profiles": ["3g.40gb", "3g.20gb"]}})
    assert problems(selection) == [("node.mig.profiles[1]", "3g.20gb")]
    assert "expected one of 1g.10gb, 1g.10gb+me, 1g.20gb" in messages(selection)[0]


@pytest.mark.parametrize("profiles", [["4g.40gb", "4g.40gb"], ["7g.80gb", "1g.10gb"],
                                      ["3g.40gb", "3g.40gb", "1g.20gb"], ["1g.10gb+me", "1g.10gb+me"]])
def test_mig_profiles_that_do_not_fit_one_gpu_are_refused(profiles):
    selection = aws_selection(node={"mig": {"profiles": profiles}})
    assert problems(selection) == [("node.mig.profiles", profiles)]


@pytest.mark.parametrize("profiles", [["3g.40gb", "3g.40gb"], ["7g.80gb"], ["4g.40gb", "2g.20gb", "1g.10gb"],
                                      ["1g.10gb"] * 7, ["1g.10gb+me", "1g.10gb"]])
def test_mig_profiles_that_fit_pass(profiles):
    assert problems(aws_selection(node={"mig": {"profiles": profiles}})) == []


def test_mig_on_a_branch_older_than_the_gpu_needs_is_refused():
    selection = aws_selection(accelerator={"instance_type": "p6-b200.48xlarge"},
                              node={"driver": {"branch": "535"}, "cuda": "12.8", "mig": {"profiles": ["7g.180gb"]}})
    found = problems(selection, date(2026, 1, 1))
    assert found == [("node.driver.branch", "535")]
    assert "MIG on B200 needs driver 570.133.20 or newer" in messages(selection, date(2026, 1, 1))[0]


def test_mps_with_mig_is_refused():
    selection = aws_selection(node={"mps": {"enabled": True}, "mig": {"profiles": ["7g.80gb"]}})
    assert problems(selection) == [("node.mps.enabled", True)]


def test_mps_thread_percentage_without_mps_is_refused():
    assert problems(aws_selection(node={"mps": {"active_thread_percentage": 50}})) == [
        ("node.mps.active_thread_percentage", 50)]


@pytest.mark.parametrize("name, value, path", [
    ("nccl_debug", "INFO", "node.nccl.env.nccl_debug"),
    ("NCCL_SOCKET_IFNAME", "eth0'; rm -rf /", "node.nccl.env.NCCL_SOCKET_IFNAME"),
    ("NCCL_IB_HCA", "$(curl evil)", "node.nccl.env.NCCL_IB_HCA"),
    ("NCCL_IB_HCA", "", "node.nccl.env.NCCL_IB_HCA"),
    ("LD_PRELOAD", "/tmp/x.so", "node.nccl.env.LD_PRELOAD"),
    ("PATH", "/tmp", "node.nccl.env.PATH"),
    ("RDMAV_FORK_SAFE", "1", "node.nccl.env.RDMAV_FORK_SAFE"),
])
def test_unsafe_nccl_overrides_are_refused(name, value, path):
    assert [p for p, _ in problems(aws_selection(node={"nccl": {"env": {name: value}}}))] == [path]


@pytest.mark.parametrize("name", ["FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "FI_EFA_FORK_SAFE",
                                  "FI_EFA_SET_CUDA_SYNC_MEMOPS", "NCCL_PROTO"])
def test_obsolete_efa_variables_are_refused_on_efa(name):
    selection = aws_selection(node={"nccl": {"env": {name: "1"}}})
    assert selection.fabric == "efa" and problems(selection) == [(f"node.nccl.env.{name}", name)]
    assert "obsolete for EFA" in messages(selection)[0]


def test_communication_variables_of_every_documented_prefix_pass():
    env = {"NCCL_IB_HCA": "rdmap", "FI_EFA_USE_HUGE_PAGE": "0", "OFI_NCCL_PROTOCOL": "RDMA", "UCX_TLS": "tcp",
           "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert problems(aws_selection(node={"nccl": {"env": env}})) == []


def test_obsolete_efa_names_are_allowed_on_other_fabrics():
    from .conftest import GCP_A3_HIGH
    assert problems(selection_for(GCP_A3_HIGH, node={"nccl": {"env": {"NCCL_PROTO": "Simple"}}})) == []
    assert problems(aws_selection(node={"nccl": {"env": {"FI_EFA_USE_HUGE_PAGE": "0"}}})) == []


def test_allowed_cpus_beyond_the_instance_are_refused():
    selection = aws_selection(accelerator={"instance_type": "g6e.xlarge"}, nodes=1,
                              node={"isolation": {"allowed_cpus": "0-7"}})
    assert problems(selection) == [("node.isolation.allowed_cpus", "0-7")]
    assert "g6e.xlarge has CPUs 0-3" in messages(selection)[0]


def test_dcgm_exporter_without_a_container_runtime_is_refused():
    assert problems(aws_selection(node={"container_runtime": "none"})) == [("node.exporters.dcgm", True)]
    assert problems(aws_selection(node={"container_runtime": "none", "exporters": {"dcgm": False}})) == []


def test_empty_drain_command_is_refused():
    assert problems(aws_selection(node={"spot": {"drain_command": "  "}})) == [("node.spot.drain_command", "  ")]


def test_rules_work_for_rows_of_other_clouds():
    assert problems(selection_for(AZURE_NC_A100, nodes=1, node={"mig": {"profiles": ["3g.40gb", "4g.40gb"]}})) == []
    assert problems(selection_for(GCP_G2, nodes=1, node={"mig": {"profiles": ["1g.6gb"]}})) == [
        ("node.mig.profiles", ["1g.6gb"])]


def test_min_driver_branch_table():
    assert (min_driver_branch("13.0"), min_driver_branch("12.4"), min_driver_branch("11.8")) == (580, 525, 450)
    assert set(DRIVER_BRANCHES) == {"535", "580", "595", "610", "620"}


def test_messages_follow_the_house_style():
    message = messages(aws_selection(node={"driver": {"flavor": "proprietary"}},
                                     accelerator={"instance_type": "p6-b200.48xlarge"}))[0]
    assert message.startswith("`node.driver.flavor`: got 'proprietary'; ") and not message.endswith(".")


def test_the_selector_refuses_before_anything_is_declared():
    from gpufleet.catalog.selector import select
    from gpufleet.spec import parse_cluster_spec
    with pytest.raises(SpecError) as err:
        select(parse_cluster_spec(aws_spec(accelerator={"instance_type": "p6-b200.48xlarge"},
                                           node={"driver": {"flavor": "proprietary"}})))
    assert [p.path for p in err.value.problems] == ["node.driver.flavor"]
