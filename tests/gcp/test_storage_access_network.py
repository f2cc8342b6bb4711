"""GCP: Managed Lustre / Filestore, node service-account roles and the existing primary network."""

from __future__ import annotations

import base64
import gzip

from tests.conftest import cached_plan, of_type, one, refusal

A3 = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 2,
      "accelerator": {"instance_type": "a3-highgpu-8g"}}
LUSTRE = {**A3, "image": {"kind": "ubuntu-22.04"},
          "storage": {"shared": {"kind": "lustre", "capacity_gib": 18000, "throughput": 1000}}}
NFS = {**A3, "storage": {"shared": {"kind": "nfs"}}}
EXISTING = {**A3, "network": {"existing_network": "shared-vpc",
                              "existing_subnetwork": "projects/host/regions/us-central1/subnetworks/gpu"}}


def user_data(result) -> str:
    metadata = one(result, "gcp:compute/instanceTemplate:InstanceTemplate").inputs["metadata"]["user-data"]
    try:
        return gzip.decompress(base64.b64decode(metadata)).decode()
    except (OSError, ValueError):
        return metadata


def test_lustre_instance_in_the_nodes_zone_with_private_services_access_and_port_988_only():
    result = cached_plan(LUSTRE)
    instance = one(result, "gcp:lustre/instance:Instance").inputs
    assert (instance["location"], instance["capacityGib"], instance["perUnitStorageThroughput"]) == (
        "us-central1-a", "18000", "1000")
    assert instance["network"] == "gpufleet-net-id"
    assert one(result, "gcp:compute/globalAddress:GlobalAddress").inputs["purpose"] == "VPC_PEERING"
    assert one(result, "gcp:servicenetworking/connection:Connection").inputs["reservedPeeringRanges"] == [
        "gpufleet-test-lustre"]
    rule = next(r.inputs for r in of_type(result, "gcp:compute/firewall:Firewall") if r.name == "gpufleet-fw-lustre")
    assert rule["allows"] == [{"ports": ["988"], "protocol": "tcp"}] and rule["sourceRanges"] == ["10.90.0.0/20"]
    assert rule["targetServiceAccounts"] == ["gpufleet-test-nodes@example-project.iam.gserviceaccount.com"]
    text = user_data(result)
    assert "GPUFLEET_SHARED_SOURCE='10.90.0.2@tcp:/lustrefs'" in text and "GPUFLEET_SHARED_FSTYPE='lustre'" in text


def test_filestore_for_nfs_adds_no_firewall_rule():
    result = cached_plan(NFS)
    instance = one(result, "gcp:filestore/instance:Instance").inputs
    assert instance["tier"] == "BASIC_SSD" and instance["fileShares"] == {"capacityGb": 2560, "name": "shared"}
    assert instance["networks"][0]["connectMode"] == "DIRECT_PEERING"
    assert {r.name for r in of_type(result, "gcp:compute/firewall:Firewall")} == {
        r.name for r in of_type(cached_plan(A3), "gcp:compute/firewall:Firewall")}
    assert "GPUFLEET_SHARED_SOURCE='10.91.0.2:/shared'" in user_data(result)


def test_lustre_needs_the_ubuntu_22_04_image_google_publishes_clients_for():
    message = refusal({**A3, "storage": {"shared": {"kind": "lustre"}}})
    assert "Ubuntu 22.04 kernels only" in message and "image.kind: ubuntu-22.04" in message


def test_lustre_capacity_steps_per_tier_and_another_zone_refused():
    assert "multiple of 9,000 GiB" in refusal({**A3, "storage": {"shared": {"kind": "lustre", "capacity_gib": 10000,
                                                                             "throughput": 1000}}})
    message = refusal({**A3, "storage": {"shared": {"kind": "nfs",
                                                    "existing_id": "projects/p/locations/us-central1-b/instances/fs"}}})
    assert "in us-central1-b but the nodes are in zone us-central1-a" in message


def test_service_account_roles_project_and_bucket_and_admin_refusal():
    spec = {**A3, "access": {"service_account_roles": [{"role": "roles/storage.objectAdmin", "bucket": "ckpt"}],
                             "container_registry_read": True, "buckets_read": ["datasets"]}}
    result = cached_plan(spec)
    project_roles = {r.inputs["role"] for r in of_type(result, "gcp:projects/iAMMember:IAMMember")}
    assert "roles/artifactregistry.reader" in project_roles
    buckets = sorted((r.inputs["bucket"], r.inputs["role"]) for r in of_type(
        result, "gcp:storage/bucketIAMMember:BucketIAMMember"))
    assert buckets == [("ckpt", "roles/storage.objectAdmin"), ("datasets", "roles/storage.objectViewer")]
    assert "roles/storage.objectAdmin on gs://ckpt" in result.outputs["service_account_roles"]
    assert "access.allow_admin: true" in refusal({**A3, "access": {"service_account_roles": [{"role": "roles/editor"}]}})


def test_existing_network_keeps_the_gpu_vpcs_and_creates_no_primary_network():
    result, own = cached_plan(EXISTING), cached_plan(A3)
    names = {r.name for r in of_type(result, "gcp:compute/network:Network")}
    assert names == {r.name for r in of_type(own, "gcp:compute/network:Network")} - {"gpufleet-net"}
    assert not of_type(result, "gcp:compute/router:Router") and not of_type(result, "gcp:compute/routerNat:RouterNat")
    assert len(result.resources) == len(own.resources) - 4  # net, subnet, router, nat
    nic = one(result, "gcp:compute/instanceTemplate:InstanceTemplate").inputs["networkInterfaces"][0]
    assert nic["subnetwork"] == "projects/host/regions/us-central1/subnetworks/gpu"
    internal = next(r.inputs for r in of_type(result, "gcp:compute/firewall:Firewall") if r.name == "gpufleet-fw-internal")
    assert internal["network"] == "projects/example-project/global/networks/shared-vpc"
    assert internal["sourceRanges"] == ["10.128.0.0/20"]


def test_existing_network_needs_its_subnetwork():
    assert "existing_network and existing_subnetwork go together" in refusal(
        {**A3, "network": {"existing_network": "shared-vpc"}})
