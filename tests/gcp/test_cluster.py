"""What GcpGpuCluster declares, checked on the inputs the engine would receive (camelCase)."""

from __future__ import annotations

import re
import subprocess

import pytest

from gpufleet.naming import cluster_hash
from gpufleet.plan.stackfile import read_stack_config
from tests.conftest import cached_plan, of_type, one, plan_spec, refusal
from tests.validators import require_tool

NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
GROUP = "gcp:compute/instanceGroupManager:InstanceGroupManager"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
GCP_METADATA_VALUE_MAX_BYTES = 262144

BASE = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 2}
TRAIN = {**BASE, "accelerator": {"instance_type": "a3-megagpu-8g"}, "market": "spot", "fabric": "auto",
         "gpudirect": {"trust_google_images": True, "allow_secure_boot_off": True}}
DEV = {**BASE, "nodes": 1, "accelerator": {"instance_type": "g2-standard-8"}}
A2 = {**BASE, "accelerator": {"instance_type": "a2-highgpu-8g"}, "tags": {"Team": "ml"}}
DEV_OPEN = {**DEV, "access": {"monitoring_cidrs": ["10.9.0.0/24"], "ssh_cidrs": ["198.51.100.0/24"]}}
UNPLACED = {**TRAIN, "placement_group": False, "nodes": 8}
A3_HIGH = {**BASE, "accelerator": {"instance_type": "a3-highgpu-8g"}}
# A4 and A3 Ultra are not sold on demand: Spot here (a reservation is the other way, tested below).
A4 = {**BASE, "zone": "us-central1-b", "accelerator": {"instance_type": "a4-highgpu-8g"}, "market": "spot"}
A3_ULTRA = {**A4, "accelerator": {"instance_type": "a3-ultragpu-8g"}}
G4 = {**BASE, "accelerator": {"instance_type": "g4-standard-48"}}  # RTX PRO 6000, two nodes over TCP
G4_8 = {**BASE, "nodes": 1, "accelerator": {"gpu": "RTX PRO 6000", "gpus_per_node": 8}, "market": "spot"}


UNIQUE = cluster_hash("gpufleet", project="gpufleet", stack="test")  # the names' per-cluster hash
PROJECT = "my-proj"  # A4 plans run with `gcp:project` set; the others use the mock's placeholder project


def plan_of(spec: dict):
    return cached_plan(spec, {"gcp:project": PROJECT} if spec == A4 else None)


def by_name(result, token: str) -> dict:
    return {r.name: r.inputs for r in of_type(result, token)}


def test_declares_the_whole_cluster_under_one_component():
    result = plan_of(TRAIN)
    component = one(result, "gpufleet:index:GcpGpuCluster")
    for token in (NETWORK, "gcp:compute/router:Router", "gcp:compute/routerNat:RouterNat", FIREWALL, POLICY,
                  TEMPLATE, GROUP, "gcp:serviceaccount/account:Account"):
        assert of_type(result, token), token
    assert all(r.parent == component.urn for r in result.resources if r is not component)
    assert all(r.name.startswith("gpufleet-") for r in result.resources if r is not component)


@pytest.mark.parametrize("spec, vpcs, mtus, nic_types", [
    (A2, 1, {1460}, ["GVNIC"]),
    (DEV, 1, {1460}, ["GVNIC"]),
    (A3_HIGH, 5, {8244}, ["GVNIC"] * 5),
    ({**TRAIN, "fabric": "auto"}, 9, {8244}, ["GVNIC"] * 9),
    (A3_ULTRA, 3, {8896}, ["GVNIC"] * 2 + ["MRDMA"] * 8),
    (A4, 3, {8896}, ["GVNIC"] * 2 + ["MRDMA"] * 8),
    (G4, 1, {1460}, ["GVNIC"]),
    (G4_8, 1, {1460}, ["GVNIC"]),  # g4-standard-384 has a second NIC; gpufleet attaches one
])
def test_nics_vpcs_mtu_and_nic_types_per_family(spec, vpcs, mtus, nic_types):
    result = plan_of(spec)
    networks = by_name(result, NETWORK)
    assert len(networks) == vpcs
    assert {n["mtu"] for n in networks.values()} == mtus
    assert all(n["autoCreateSubnetworks"] is False for n in networks.values())
    assert sum("networkProfile" in n for n in networks.values()) == (1 if "MRDMA" in nic_types else 0)
    nics = one(result, TEMPLATE).inputs["networkInterfaces"]
    assert [n["nicType"] for n in nics] == nic_types
    subnets = by_name(result, SUBNET)
    assert len(subnets) == len(nics)
    assert sorted(n["subnetwork"] for n in nics) == sorted(f"{name}-id" for name in subnets)
    assert result.outputs["nics_per_node"] == len(nic_types)


def test_a3_mega_gpu_vpcs_each_carry_one_gpu_nic_and_an_internal_firewall():
    result = plan_of({**TRAIN, "fabric": "auto"})
    nics = one(result, TEMPLATE).inputs["networkInterfaces"]
    assert [n["network"] for n in nics[1:]] == [f"gpufleet-gpu-net-{i}-id" for i in range(8)]
    firewalls = by_name(result, FIREWALL)
    for i in range(8):
        rule = firewalls[f"gpufleet-fw-internal-gpu-net-{i}"]
        assert rule["network"] == f"gpufleet-gpu-net-{i}-id"
        assert rule["sourceRanges"] == [by_name(result, SUBNET)[f"gpufleet-gpu-subnet-{i}"]["ipCidrRange"]]


def test_roce_vpc_has_the_rdma_profile_of_the_project_and_zone_eight_subnets_and_no_firewall():
    """A3 Ultra has the same layout from the same catalog facts (tests/gcp/test_fabric.py)."""
    result = plan_of(A4)
    rdma = by_name(result, NETWORK)["gpufleet-rdma-net"]
    assert rdma["networkProfile"] == "projects/my-proj/global/networkProfiles/us-central1-b-vpc-roce"
    assert sum(1 for s in by_name(result, SUBNET).values() if s["network"] == "gpufleet-rdma-net-id") == 8
    assert all(f["network"] != "gpufleet-rdma-net-id" for f in by_name(result, FIREWALL).values())
    assert "networkProfile" not in by_name(result, NETWORK)["gpufleet-net"]
    nics = one(result, TEMPLATE).inputs["networkInterfaces"]
    assert {n["network"] for n in nics if n["nicType"] == "MRDMA"} == {"gpufleet-rdma-net-id"}


def test_no_node_gets_an_external_ip_and_egress_goes_through_nat():
    for spec in (TRAIN, DEV, A4):
        nics = one(plan_of(spec), TEMPLATE).inputs["networkInterfaces"]
        assert all("accessConfigs" not in n and "ipv6AccessConfigs" not in n for n in nics)
    nat = one(plan_of(TRAIN), "gcp:compute/routerNat:RouterNat").inputs
    assert nat["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    assert nat["subnetworks"] == [{"name": "gpufleet-subnet-id", "sourceIpRangesToNats": ["ALL_IP_RANGES"]}]
    assert one(plan_of(TRAIN), "gcp:compute/router:Router").inputs["network"] == "gpufleet-net-id"


def test_firewall_opens_ssh_to_iap_only_and_exporters_to_the_subnet_and_monitoring_cidrs():
    assert by_name(plan_of(DEV), FIREWALL)["gpufleet-fw-ssh"]["sourceRanges"] == ["35.235.240.0/20"]
    rules = by_name(plan_of(DEV_OPEN), FIREWALL)
    assert set(rules) == {"gpufleet-fw-ssh", "gpufleet-fw-internal", "gpufleet-fw-exporters", "gpufleet-fw-health"}
    assert rules["gpufleet-fw-health"]["sourceRanges"] == ["35.191.0.0/16", "130.211.0.0/22"]
    assert rules["gpufleet-fw-health"]["allows"] == [{"ports": ["9408"], "protocol": "tcp"}]
    assert rules["gpufleet-fw-ssh"]["sourceRanges"] == ["35.235.240.0/20", "198.51.100.0/24"]
    assert rules["gpufleet-fw-ssh"]["allows"] == [{"ports": ["22"], "protocol": "tcp"}]
    assert rules["gpufleet-fw-exporters"]["sourceRanges"] == ["10.0.0.0/16", "10.9.0.0/24"]
    assert rules["gpufleet-fw-exporters"]["allows"] == [{"ports": ["9400", "9100"], "protocol": "tcp"}]
    assert rules["gpufleet-fw-internal"]["sourceRanges"] == ["10.0.0.0/16"]
    email = f"gpufleet-test-{UNIQUE}@example-project.iam.gserviceaccount.com"
    assert all(r["direction"] == "INGRESS" and r["targetServiceAccounts"] == [email] for r in rules.values())


def test_compact_placement_policy_is_attached_to_the_template():
    result = plan_of(A2)
    policy = one(result, POLICY).inputs
    assert policy["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "maxDistance": 2}
    assert policy["region"] == "us-central1"
    template = one(result, TEMPLATE).inputs
    assert template["resourcePolicies"] == "projects/example-project/regions/us-central1/resourcePolicies/gpufleet-pg"
    assert "resourcePolicies" not in one(result, GROUP).inputs
    assert result.outputs["placement_policy"] == "gpufleet-pg"


@pytest.mark.parametrize("spec", [TRAIN, A3_HIGH, A3_ULTRA, A4])
def test_a3_and_a4_groups_take_a_workload_policy_instead_of_compact_placement(spec):
    result = plan_of(spec)
    policy = one(result, POLICY)
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT", "maxTopologyDistance": "BLOCK"}
    assert "groupPlacementPolicy" not in policy.inputs
    assert "resourcePolicies" not in one(result, TEMPLATE).inputs
    assert one(result, GROUP).inputs["resourcePolicies"] == {"workloadPolicy": "gpufleet-pg-self-link"}


def test_every_group_repairs_from_the_nodes_health_endpoint_onto_the_current_template():
    result = plan_of(TRAIN)
    check = one(result, "gcp:compute/healthCheck:HealthCheck").inputs
    assert check["httpHealthCheck"] == {"port": 9408, "requestPath": "/health"}
    group = one(result, GROUP).inputs
    assert group["autoHealingPolicies"] == {"healthCheck": "gpufleet-health-id", "initialDelaySec": 1800}
    assert group["instanceLifecyclePolicy"] == {"forceUpdateOnRepair": "YES", "defaultActionOnFailure": "REPAIR"}


def test_rollout_makes_updates_proactive_without_surge():
    group = one(plan_of({**TRAIN, "nodes": 4, "rollout": {"enabled": True, "max_unavailable": 2}}), GROUP).inputs
    assert group["updatePolicy"]["type"] == "PROACTIVE"
    assert (group["updatePolicy"]["maxUnavailableFixed"], group["updatePolicy"]["maxSurgeFixed"]) == (2, 0)


def test_single_node_and_opt_out_declare_no_placement_policy():
    assert not of_type(plan_of(DEV), POLICY)
    assert "resourcePolicies" not in one(plan_of(DEV), TEMPLATE).inputs
    assert not of_type(plan_of(UNPLACED), POLICY)


def test_spot_scheduling():
    scheduling = one(plan_of(TRAIN), TEMPLATE).inputs["scheduling"]
    assert scheduling == {"automaticRestart": False, "instanceTerminationAction": "DELETE",
                          "onHostMaintenance": "TERMINATE", "preemptible": True, "provisioningModel": "SPOT"}


def test_on_demand_scheduling():
    scheduling = one(plan_of(DEV), TEMPLATE).inputs["scheduling"]
    assert scheduling == {"automaticRestart": False, "onHostMaintenance": "TERMINATE", "preemptible": False,
                          "provisioningModel": "STANDARD"}


def test_template_boots_a_shielded_driver_ready_ubuntu_with_os_login_and_user_data():
    template = one(plan_of(TRAIN), TEMPLATE).inputs
    assert template["machineType"] == "a3-megagpu-8g"
    [disk] = template["disks"]
    assert disk["sourceImage"] == ("https://www.googleapis.com/compute/v1/projects/ubuntu-os-accelerator-images/"
                                   "global/images/ubuntu-accelerator-2404-amd64-with-nvidia-580-pinned-at-deploy")
    assert disk["boot"] is True and disk["autoDelete"] is True and disk["diskSizeGb"] == 200
    assert "diskEncryptionKey" not in disk  # Google-managed encryption at rest
    # gcp-train runs GPUDirect-TCPXO, whose DKMS-built module is unsigned: Secure Boot off, as the spec accepted
    assert template["shieldedInstanceConfig"] == {"enableIntegrityMonitoring": True, "enableSecureBoot": False,
                                                  "enableVtpm": True}
    fallback = one(plan_of({**TRAIN, "gpudirect": {}}), TEMPLATE).inputs
    assert fallback["shieldedInstanceConfig"]["enableSecureBoot"] is True
    metadata = template["metadata"]
    assert metadata["enable-oslogin"] == "TRUE" and metadata["block-project-ssh-keys"] == "TRUE"
    assert metadata["user-data"].startswith("#cloud-config")
    assert "guestAccelerators" not in template  # the machine type brings its GPUs
    assert template["serviceAccount"]["email"] == f"gpufleet-test-{UNIQUE}@example-project.iam.gserviceaccount.com"


def test_a4_boots_from_hyperdisk():
    assert one(plan_of(A4), TEMPLATE).inputs["disks"][0]["diskType"] == "hyperdisk-balanced"


@pytest.mark.parametrize("spec, machine_type, gpus", [(G4, "g4-standard-48", 1), (G4_8, "g4-standard-384", 8)])
def test_g4_boots_from_hyperdisk_on_one_gvnic_nic_with_the_open_580_driver_image(spec, machine_type, gpus):
    result = plan_of(spec)
    template = one(result, TEMPLATE).inputs
    assert template["machineType"] == machine_type and "guestAccelerators" not in template
    [disk] = template["disks"]
    assert disk["diskType"] == "hyperdisk-balanced"  # G4 takes no Persistent Disk
    assert disk["sourceImage"].endswith("/ubuntu-accelerator-2404-amd64-with-nvidia-580-pinned-at-deploy")
    assert [n["nicType"] for n in template["networkInterfaces"]] == ["GVNIC"]
    user_data = template["metadata"]["user-data"]
    for line in ("GPUFLEET_GPU_MODEL='RTX-PRO-6000'", "GPUFLEET_GPU_ARCHITECTURE='blackwell'",
                 "GPUFLEET_DRIVER_BRANCH='580'", "GPUFLEET_DRIVER_FLAVOR='open'", "GPUFLEET_FABRIC='tcp'",
                 "GPUFLEET_NVSWITCH='0'"):
        assert line in user_data
    assert result.outputs["gpus_per_node"] == gpus
    assert not of_type(result, NETWORK)[1:]  # no GPU VPCs


def test_g4_nodes_share_a_best_effort_compact_placement_policy_on_the_template():
    """Google lists G4 among compact-placement machine types, not workload-policy ones, and documents no
    max distance for it."""
    result = plan_of(G4)
    assert one(result, POLICY).inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED"}
    assert one(result, TEMPLATE).inputs["resourcePolicies"].endswith("/resourcePolicies/gpufleet-pg")
    assert "resourcePolicies" not in one(result, GROUP).inputs


@pytest.mark.parametrize("spec", [TRAIN, DEV, A4])
def test_user_data_fits_the_metadata_value_limit(spec):
    user_data = one(plan_of(spec), TEMPLATE).inputs["metadata"]["user-data"]
    assert 0 < len(user_data.encode()) <= GCP_METADATA_VALUE_MAX_BYTES


def test_user_data_passes_cloud_init_schema(tmp_path):
    tool = require_tool("cloud-init", "install it with `apt-get install -y cloud-init` (Debian/Ubuntu package)")
    path = tmp_path / "user-data.yaml"
    path.write_text(one(plan_of(TRAIN), TEMPLATE).inputs["metadata"]["user-data"])
    done = subprocess.run([tool, "schema", "-c", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_shipped_stacks_are_the_specs_tested_here():
    assert read_stack_config("gcp-train")["gpufleet:cluster"] == TRAIN
    assert read_stack_config("gcp-dev")["gpufleet:cluster"] == DEV


def test_user_data_is_byte_identical_between_runs():
    first = one(plan_of(TRAIN), TEMPLATE).inputs
    second = one(plan_spec(TRAIN), TEMPLATE).inputs
    assert first == second


def test_group_runs_the_node_count_in_the_zone():
    group = one(plan_of(TRAIN), GROUP).inputs
    assert group["targetSize"] == 2 and group["zone"] == "us-central1-a"
    assert group["versions"] == [{"instanceTemplate": "gpufleet-template-id", "name": "nodes"}]
    assert group["baseInstanceName"] == f"gpufleet-test-{UNIQUE}"
    assert group["updatePolicy"]["type"] == "OPPORTUNISTIC"


SINGLE_NIC = {**TRAIN, "fabric": "tcp"}  # NCCL over the host NIC only: one VPC


@pytest.mark.parametrize("spec, small_nodes, large_nodes", [(TRAIN, 2, 3), (TRAIN, 1, 2), (SINGLE_NIC, 2, 3)])
def test_changing_nodes_changes_only_the_groups_target_size(spec, small_nodes, large_nodes):
    """A single A3 node already has its GPU NICs and placement policy, so growing it replaces no template."""
    small = {r.name: r.inputs for r in plan_of({**spec, "nodes": small_nodes}).resources}
    large = {r.name: r.inputs for r in plan_of({**spec, "nodes": large_nodes}).resources}
    assert small.keys() == large.keys()
    changed = [name for name in small if small[name] != large[name]]
    assert changed == ["gpufleet-nodes"]
    assert {k for k in small["gpufleet-nodes"] if small["gpufleet-nodes"][k] != large["gpufleet-nodes"][k]} == {"targetSize"}


def test_resource_count_stays_flat_as_nodes_grow():
    """8 vs 1024 nodes without placement; 2 vs 3 with it (the policy caps placed clusters at 256)."""
    assert len(plan_of(UNPLACED).resources) == len(plan_of({**UNPLACED, "nodes": 1024}).resources)
    placed = len(plan_of(TRAIN).resources)
    assert len(plan_of({**TRAIN, "nodes": 3}).resources) == placed
    assert placed == len(plan_of(UNPLACED).resources) + 1  # the placement policy


def test_service_account_gets_only_log_metric_and_own_instance_label_rights():
    result = plan_of({**TRAIN, "monitoring": {"server": False}})  # the nodes' identity alone
    account = one(result, "gcp:serviceaccount/account:Account").inputs
    assert account["accountId"] == f"gpufleet-test-{UNIQUE}"
    members = by_name(result, "gcp:projects/iAMMember:IAMMember")
    assert {m["role"] for m in members.values()} == {
        "roles/logging.logWriter", "roles/monitoring.metricWriter",
        f"projects/example-project/roles/gpufleet_test_health_{UNIQUE}"}
    assert all(m["member"] == f"serviceAccount:gpufleet-test-{UNIQUE}@example-project.iam.gserviceaccount.com"
               for m in members.values())
    condition = members["gpufleet-sa-health"]["condition"]["expression"]
    assert condition == ('resource.name.startsWith("projects/example-project/zones/us-central1-a/instances/'
                         f'gpufleet-test-{UNIQUE}-")')
    role = one(result, "gcp:projects/iAMCustomRole:IAMCustomRole").inputs
    assert role["permissions"] == ["compute.instances.get", "compute.instances.setLabels"]


def test_provenance_labels_on_the_template_and_descriptions_elsewhere():
    result = plan_of(A2)
    template = one(result, TEMPLATE).inputs
    assert template["labels"] == {"gpufleet-component": "gcpgpucluster", "gpufleet-role": "node",
                                  "gpufleet-stack": "test", "team": "ml"}
    assert template["disks"][0]["labels"]["gpufleet-role"] == "boot-disk"
    described = [r for r in result.resources if r.custom and r.type not in (
        "gcp:projects/iAMMember:IAMMember", "gcp:compute/routerNat:RouterNat")]
    assert described and all("gpufleet: stack=test component=GcpGpuCluster" in r.inputs.get("description", "")
               for r in described), [r.name for r in described if "description" not in r.inputs]


def test_outputs_say_how_to_connect_list_nodes_and_what_it_costs():
    outputs = plan_of(TRAIN).outputs
    assert outputs["connect"].startswith("gcloud compute ssh --zone us-central1-a --tunnel-through-iap ")
    assert "gcloud compute instance-groups managed list-instances gpufleet-nodes --zone us-central1-a" in outputs["list_nodes"]
    assert outputs["hostfile"].endswith("slots=8/' > hostfile")
    assert outputs["fabric"] == "tcpxo" and outputs["gpus_total"] == 16
    assert outputs["estimated_usd_per_hour"] == pytest.approx(2 * 28.17013, abs=0.01)
    assert outputs["gpu_networks"] == [f"gpufleet-gpu-net-{i}-id" for i in range(8)]
    assert outputs["fleet_name"] == "gpufleet-nodes"


# --- refusals: one message naming the field, and nothing declared ---------------------------------------------


def refused(spec: dict, match: str) -> None:
    assert re.search(match, refusal(spec))


def test_refuses_more_nodes_than_compact_placement_holds():
    refused({**TRAIN, "nodes": 257}, r"`nodes`: got 257; a compact placement policy for a3-megagpu-8g at max "
                                     r"distance 2 holds at most 256 VMs")


def test_refuses_an_accelerator_count_the_machine_type_does_not_have():
    refused({**BASE, "accelerator": {"instance_type": "a3-megagpu-8g", "gpus_per_node": 4}},
            r"`accelerator.gpus_per_node`: got 4; a3-megagpu-8g has 8 GPUs")
    refused({**BASE, "accelerator": {"gpu": "H200", "gpus_per_node": 4}}, r"`accelerator.gpus_per_node`: got 4")


def test_refuses_a_zone_without_the_machine_type():
    refused({**A4, "zone": "us-central1-a"}, r"`zone`: got 'us-central1-a'; a4-highgpu-8g is not offered in that zone")


@pytest.mark.parametrize("name", ["a4-highgpu-8g", "a3-ultragpu-8g"])
def test_refuses_on_demand_nodes_of_a_type_google_sells_only_through_reservations(name):
    refused({**A4, "accelerator": {"instance_type": name}, "market": "on-demand"},
            rf"`market.type`: got 'on-demand'; {name} is not sold on demand: gcp offers its standard capacity only "
            r"through a reservation .*; use `market.type: spot`, or name the reservation in "
            r"`market.capacity_reservation_id`")


def test_a_reservation_only_type_consumes_its_reservation_reservation_bound_and_warns_about_its_price():
    result = plan_of({**A3_ULTRA, "market": {"type": "on-demand", "capacity_reservation_id": "h200-block"}})
    template = one(result, TEMPLATE).inputs
    assert template["scheduling"] == {"automaticRestart": False, "onHostMaintenance": "TERMINATE",
                                      "preemptible": False, "provisioningModel": "RESERVATION_BOUND"}
    assert template["reservationAffinity"] == {
        "type": "SPECIFIC_RESERVATION",
        "specificReservation": {"key": "compute.googleapis.com/reservation-name", "values": ["h200-block"]}}
    assert any("runs reservation-bound in 'h200-block'" in w for w in result.outputs["warnings"])


def test_refuses_an_image_that_would_ignore_user_data():
    refused({**DEV, "image": {"id": "projects/debian-cloud/global/images/family/debian-12"}},
            r"`image.id`: .*do not run cloud-init")


def test_refuses_mixed_market_spot_price_cap_and_bad_labels_all_at_once():
    refused({**TRAIN, "market": {"type": "mixed", "on_demand_base": 1, "spot_max_price_per_hour": 5},
             "tags": {"cost:center": "x"}},
            r"(?s)3 problem.*`tags.cost:center`.*`market.type`.*`market.spot_max_price_per_hour`")


def test_refuses_an_existing_subnet():
    refused({**DEV, "network": {"existing_subnet_id": "projects/p/regions/us-central1/subnetworks/s"}},
            r"`network.existing_subnet_id`")


def test_refuses_user_data_over_the_metadata_value_limit(monkeypatch):
    import gpufleet.pipeline as pipeline
    oversized = "#cloud-config\n" + "#" * GCP_METADATA_VALUE_MAX_BYTES
    monkeypatch.setattr(pipeline, "user_data_for", lambda selection, name, pin, group=None: oversized)
    refused(DEV, r"`node`: .*gcp allows at most 262144")


def test_refuses_node_options_that_make_the_user_data_too_large_in_one_message():
    message = refusal({**DEV, "node": {"nccl": {"env": {"NCCL_BIG": "x" * 270000}}}})
    assert message.count("problem(s)") == 1, message  # the node software's own SpecError, not wrapped in another
    assert re.search(r"`node`: got '\d+ raw bytes of gcp user data'; gcp allows at most 262144", message)


def test_image_track_latest_leaves_the_family_in_the_template():
    [disk] = one(plan_of({**TRAIN, "image": {"track": "latest"}}), TEMPLATE).inputs["disks"]
    assert disk["sourceImage"] == ("projects/ubuntu-os-accelerator-images/global/images/family/"
                                   "ubuntu-accelerator-2404-amd64-with-nvidia-580")
def test_gpudirect_on_a3_high_is_refused_and_on_a3_mega_refused_at_the_missing_opt_in():
    """Never configure a transport that cannot start: A3 High's TCPX kernel has no public source; A3 Mega's TCPXO
    runs only once the spec accepts what it trusts, and the refusal names the first field that would allow it."""
    refused({**BASE, "accelerator": {"instance_type": "a3-highgpu-8g"}, "fabric": "gpudirect"},
            r"`fabric`: got 'gpudirect'; GPUDirect-TCPX is not delivered on a3-highgpu-8g: it needs \(1\) the "
            r"TCPX-patched kernel `linux-gcp-tcpx`")
    refused({**BASE, "accelerator": {"instance_type": "a3-megagpu-8g"}, "fabric": "gpudirect"},
            r"`gpudirect.trust_google_images`: got false; GPUDirect-TCPXO on a3-megagpu-8g needs "
            r"`gpudirect.trust_google_images: true`")
    refused({**BASE, "accelerator": {"instance_type": "a3-megagpu-8g"}, "fabric": "gpudirect",
             "gpudirect": {"trust_google_images": True}},
            r"`gpudirect.allow_secure_boot_off`: got false; .*Secure Boot")