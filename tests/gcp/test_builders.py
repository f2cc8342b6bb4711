"""Pure GCP rules and builders: placement limits, images, labels, firewall refusals, scheduling, names."""

from __future__ import annotations

import re
from ipaddress import IPv4Network

import pytest

from gpufleet.catalog.loader import load_catalog
from gpufleet.gcp.fabric import subnet_cidrs, vpc_layout
from gpufleet.gcp.firewall_rule import FirewallRule
from gpufleet.gcp.identity import account_id, health_role_id
from gpufleet.gcp.image import ACCELERATOR_FAMILY, boot_image, image_problems
from gpufleet.gcp.labels import label_problems, labeler, short_name
from gpufleet.gcp.nodes import node_metadata, scheduling
from gpufleet.gcp.placement import placement_plan, placement_problems
from gpufleet.gcp.security import IAP_RANGE, firewall_plan, refuse_rules_on_rdma
from gpufleet.spec import SpecError
from gpufleet.spec.model import ClusterSpec


def row(name: str):
    return load_catalog().instance("gcp", name)


def spec(**fields) -> ClusterSpec:
    base = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 2,
            "accelerator": {"instance_type": "a3-megagpu-8g"}}
    return ClusterSpec.model_validate({**base, **fields})


class TestPlacement:
    def test_a3_refuses_max_distance_1(self):
        [problem] = placement_problems(row("a3-megagpu-8g"), 2, max_distance=1)
        assert problem.path == "placement_max_distance" and "supported: 2, 3" in problem.expected

    def test_a2_accepts_max_distance_1_up_to_22_nodes(self):
        assert placement_problems(row("a2-highgpu-8g"), 22, max_distance=1) == []
        [problem] = placement_problems(row("a2-highgpu-8g"), 23, max_distance=1)
        assert problem.path == "nodes" and "at most 22" in problem.expected

    @pytest.mark.parametrize("name, distance, cap", [("a3-highgpu-8g", 2, 256), ("a4-highgpu-8g", 2, 256),
                                                     ("a2-ultragpu-8g", 2, 150), ("g2-standard-8", None, 150)])
    def test_default_distance_and_capacity_come_from_the_catalog(self, name, distance, cap):
        plan = placement_plan(row(name))
        assert (plan.max_distance, plan.max_vms) == (distance, cap)
        assert placement_problems(row(name), cap) == []
        assert placement_problems(row(name), cap + 1)[0].path == "nodes"

    def test_distance_3_holds_1500(self):
        assert placement_problems(row("a3-megagpu-8g"), 1500, max_distance=3) == []


class TestImage:
    def test_default_is_the_ubuntu_accelerator_family_of_the_driver_branch(self):
        image = boot_image(spec())
        assert image.source == ACCELERATOR_FAMILY.format(branch="580") and image.shielded and image.warning is None

    def test_driver_ready_needs_a_branch_with_an_accelerator_image(self):
        [problem] = image_problems(spec(node={"driver": {"branch": "535"}}))
        assert problem.path == "node.driver.branch"
        assert image_problems(spec(node={"driver": {"branch": "535"}}, image={"kind": "ubuntu-24.04"})) == []

    @pytest.mark.parametrize("image_id", [
        "projects/debian-cloud/global/images/family/debian-12",
        "projects/deeplearning-platform-release/global/images/family/common-cu128-debian-11-py310",
        "projects/rocky-linux-cloud/global/images/family/rocky-linux-9",
        "ubuntu-2204-lts",
    ])
    def test_images_that_would_ignore_user_data_are_refused(self, image_id):
        [problem] = image_problems(spec(image={"id": image_id}))
        assert problem.path == "image.id"

    @pytest.mark.parametrize("image_id", [
        "projects/ubuntu-os-cloud/global/images/ubuntu-2404-noble-amd64-v20260101",
        "projects/deeplearning-platform-release/global/images/family/common-cu128-ubuntu-2204-nvidia-570",
        "https://www.googleapis.com/compute/v1/projects/ubuntu-os-accelerator-images/global/images/family/x-580",
    ])
    def test_ubuntu_images_are_accepted(self, image_id):
        assert image_problems(spec(image={"id": image_id})) == []
        assert boot_image(spec(image={"id": image_id})).shielded

    def test_own_project_image_is_accepted_with_a_warning_and_no_forced_secure_boot(self):
        image = boot_image(spec(image={"id": "projects/my-proj/global/images/my-gpu-image"}))
        assert image_problems(spec(image={"id": "projects/my-proj/global/images/my-gpu-image"})) == []
        assert not image.shielded and "cloud-init" in image.warning


class TestLabels:
    def test_user_tags_are_lowercased_and_provenance_values_normalised(self):
        labels = labeler("Prod.Stack", {"Team": "ML"})("node")
        assert labels == {"gpufleet-component": "gcpgpucluster", "gpufleet-role": "node",
                          "gpufleet-stack": "prod-stack", "team": "ml"}

    @pytest.mark.parametrize("tags, path", [({"cost:center": "a"}, "tags.cost:center"), ({"team": "M L"}, "tags.team"),
                                            ({"9lives": "x"}, "tags.9lives"), ({"Team": "a", "team": "b"}, "tags.team")])
    def test_tags_that_cannot_be_labels_are_errors(self, tags, path):
        [problem] = label_problems(tags)
        assert problem.path == path


class TestFirewall:
    def test_ssh_only_from_iap_and_the_given_cidrs(self):
        s = spec(access={"ssh_cidrs": ["203.0.113.0/24"]})
        rules = {r.role: r for r in firewall_plan(s, vpc_layout(row("a2-highgpu-8g"), None),
                                                  {"subnet": IPv4Network("10.0.0.0/16")})}
        assert rules["fw-ssh"].sources == (IAP_RANGE, "203.0.113.0/24")
        assert rules["fw-ssh"].allows == (("tcp", ("22",)),)

    def test_no_rule_lands_on_the_roce_vpc(self):
        layout = vpc_layout(row("a4-highgpu-8g"), "roce")
        rules = firewall_plan(spec(), layout, subnet_cidrs(IPv4Network("10.0.0.0/16"), layout))
        assert {r.vpc_role for r in rules} == {"net", "net-1"}

    def test_a_rule_on_the_roce_vpc_is_refused(self):
        layout = vpc_layout(row("a3-ultragpu-8g"), "roce")
        rule = FirewallRule("fw-rdma", "rdma-net", (("tcp", ("0-65535",)),), ("172.16.0.0/12",), "x")
        with pytest.raises(SpecError, match="RoCE") as err:
            refuse_rules_on_rdma([rule], layout)
        assert err.value.problems[0].path == "firewall.fw-rdma"


class TestScheduling:
    def test_on_demand_gpu_nodes_terminate_on_maintenance_and_do_not_restart(self):
        assert scheduling(spec(), row("a3-megagpu-8g")) == {"on_host_maintenance": "TERMINATE",
                                                            "automatic_restart": False,
                                                            "provisioning_model": "STANDARD", "preemptible": False}

    def test_spot_is_preemptible_and_deleted_on_preemption(self):
        block = scheduling(spec(market="spot"), row("a3-megagpu-8g"))
        assert block["provisioning_model"] == "SPOT" and block["preemptible"] is True
        assert block["instance_termination_action"] == "DELETE" and block["automatic_restart"] is False

    @pytest.mark.parametrize("name", ["a3-ultragpu-8g", "a4-highgpu-8g", "a4x-highgpu-4g"])
    def test_a_reservation_only_type_in_its_reservation_is_reservation_bound(self, name):
        reserved = spec(market={"type": "on-demand", "capacity_reservation_id": "block-1"})
        assert scheduling(reserved, row(name))["provisioning_model"] == "RESERVATION_BOUND"
        assert scheduling(spec(market="spot"), row(name))["provisioning_model"] == "SPOT"

    def test_other_types_in_a_reservation_stay_standard(self):
        reserved = spec(market={"type": "on-demand", "capacity_reservation_id": "odr-1"})
        assert scheduling(reserved, row("a3-megagpu-8g"))["provisioning_model"] == "STANDARD"

    def test_metadata_turns_on_os_login_and_blocks_project_keys(self):
        assert node_metadata("#cloud-config\n") == {"block-project-ssh-keys": "TRUE", "enable-oslogin": "TRUE",
                                                    "user-data": "#cloud-config\n"}


class TestNames:
    def test_ids_are_valid_deterministic_and_unique_per_stack(self):
        long = "a-very-long-stack-name-for-production-training"
        assert account_id("dev", "gpufleet", "0a1b2c") == "gpufleet-dev-0a1b2c"
        assert re.fullmatch(r"[a-z][-a-z0-9]{4,28}[a-z0-9]", account_id(long, "gpufleet", "0a1b2c"))
        assert account_id(long, "gpufleet", "0a1b2c") == account_id(long, "gpufleet", "0a1b2c")
        assert account_id(long, "gpufleet", "0a1b2c") != account_id(long, "gpufleet", "9f8e7d")
        assert health_role_id("gcp-train", "gpufleet", "0a1b2c") == "gpufleet_gcp_train_health_0a1b2c"
        assert short_name("1abc", 30) == "g-1abc"
