"""GCP A3 Mega / A3 High without GPUDirect-TCPX(O): `fabric: auto` without the `gpudirect` opt-ins (the shipped
gcp-train less them) declares the host NIC and every GPU NIC on VPCs of their own and runs NCCL's socket transport over
all of them, and the plan says which field would turn TCPXO on; `fabric: gpudirect` on A3 High is refused with every
missing TCPX piece named; `fabric: tcp` stays the one-NIC cluster it was."""

from __future__ import annotations

import base64
import gzip
import re

import pytest

from gpufleet.plan.stackfile import read_stack_config
from tests.conftest import cached_plan, of_type, one, plan_spec, refusal
from tests.yaml_reader import read_yaml

TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
TRAIN = {key: value for key, value in read_stack_config("gcp-train")["gpufleet:cluster"].items()
         if key != "gpudirect"}
A3_HIGH = {**TRAIN, "accelerator": {"instance_type": "a3-highgpu-8g"}}
SINGLE_NIC = {**TRAIN, "fabric": "tcp"}
MEGA_NICS = ["enp0s12", "enp6s0", "enp7s0", "enp13s0", "enp14s0", "enp134s0", "enp135s0", "enp141s0", "enp142s0"]
HIGH_NICS = ["enp0s12", "enp6s0", "enp12s0", "enp134s0", "enp140s0"]


def node_files(result) -> dict[str, str]:
    """{path: content} of the node's cloud-config write_files, decoded from the template's user data."""
    data = one(result, TEMPLATE).inputs["metadata"]["user-data"]
    try:
        data = gzip.decompress(base64.b64decode(data)).decode()
    except (OSError, ValueError):
        pass
    return {f["path"]: f["content"] for f in read_yaml(data)["write_files"]}


def env_lines(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.mark.parametrize("spec, nics", [(TRAIN, MEGA_NICS), (A3_HIGH, HIGH_NICS)])
def test_every_nic_has_a_vpc_of_its_own_with_jumbo_mtu(spec, nics):
    result = cached_plan(spec)
    template_nics = one(result, TEMPLATE).inputs["networkInterfaces"]
    assert len(template_nics) == len(nics) and {n["nicType"] for n in template_nics} == {"GVNIC"}
    assert len({n["network"] for n in template_nics}) == len(nics)  # one VPC per NIC
    networks = {r.name: r.inputs for r in of_type(result, NETWORK)}
    assert {networks[n["network"].removesuffix("-id")]["mtu"] for n in template_nics} == {8244}
    assert len(of_type(result, SUBNET)) == len(nics)
    assert result.outputs["nics_per_node"] == len(nics) and result.outputs["fabric"] == "tcp-multinic"


@pytest.mark.parametrize("spec, nics", [(TRAIN, MEGA_NICS), (A3_HIGH, HIGH_NICS)])
def test_nccl_runs_over_every_declared_nic(spec, nics):
    result = cached_plan(spec)
    files = node_files(result)
    conf, job = env_lines(files["/etc/nccl.conf"]), env_lines(files["/etc/gpufleet/job.env"])
    node = env_lines(files["/etc/gpufleet/node.env"])
    declared = len(one(result, TEMPLATE).inputs["networkInterfaces"])
    assert conf["NCCL_SOCKET_IFNAME"] == "=" + ",".join(nics) and len(nics) == declared
    assert job["NCCL_SOCKET_IFNAME"] == f"'={','.join(nics)}'"
    for name, value in (("NCCL_SOCKET_NTHREADS", "4"), ("NCCL_NSOCKS_PERTHREAD", "4"), ("NCCL_IB_DISABLE", "1")):
        assert conf[name] == value and job[name] == f"'{value}'"
    assert "NCCL_NET" not in conf and "NCCL_NET" not in job  # NCCL's own socket transport, no plugin to miss
    assert (node["GPUFLEET_FABRIC"], node["GPUFLEET_NCCL_DISCOVER_NICS"]) == ("'tcp-multinic'", f"'{declared}'")
    assert node["GPUFLEET_RDMA_DEVICES"] == f"'{declared - 1}'"  # the acceptance check counts the GPU NICs
    assert "/usr/local/lib/gpufleet/boot.d/07-nccl-nics" in files


def test_a_users_interface_choice_wins_and_is_not_rediscovered():
    files = node_files(cached_plan({**TRAIN, "node": {"nccl": {"env": {"NCCL_SOCKET_IFNAME": "=enp6s0"}}}}))
    assert env_lines(files["/etc/nccl.conf"])["NCCL_SOCKET_IFNAME"] == "=enp6s0"
    assert "GPUFLEET_NCCL_DISCOVER_NICS" not in env_lines(files["/etc/gpufleet/node.env"])


def test_fabric_tcp_keeps_the_one_nic_cluster():
    result = cached_plan(SINGLE_NIC)
    assert len(one(result, TEMPLATE).inputs["networkInterfaces"]) == 1 and result.outputs["fabric"] == "tcp"
    files = node_files(result)
    assert env_lines(files["/etc/nccl.conf"])["NCCL_SOCKET_IFNAME"] == "^docker,lo,veth"
    assert "/usr/local/lib/gpufleet/boot.d/07-nccl-nics" not in files
    assert "GPUFLEET_NCCL_DISCOVER_NICS" not in env_lines(files["/etc/gpufleet/node.env"])
    assert "multinic" not in one(result, TEMPLATE).inputs["metadata"]["user-data"]


def test_the_plan_is_byte_identical_between_runs():
    assert one(cached_plan(TRAIN), TEMPLATE).inputs == one(plan_spec(TRAIN), TEMPLATE).inputs


# What the A3 High refusal must name: the kernel without a public source or key, the containers that need it, and
# why the one public image with TCPX does not serve.
TCPX_PIECES = ("kernel `linux-gcp-tcpx`", "Canonical PPA whose login and password Google hands out on request",
               "no public key to pin", "a3-highgpu-8g/README.md", "Container-Optimized OS", "no apt or DKMS",
               "`gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.12`",
               "`nccl-plugin-gpudirecttcpx-dev:v3.1.9-2.19.4-12.0`", "a3high-slurm-blueprint.yaml")


def test_gpudirect_refusal_on_a3_high_names_every_missing_piece_and_the_fallback():
    message = refusal({**A3_HIGH, "fabric": "gpudirect"})
    assert message.count("`fabric`: got 'gpudirect'") == 1
    assert [piece for piece in TCPX_PIECES if piece not in message] == []
    assert re.search(r"use `fabric: auto` \(NCCL over TCP on all 5 gVNIC NICs", message)


def test_the_fallback_is_announced_in_the_plan_with_the_fields_that_would_change_it():
    [warning] = [w for w in cached_plan(TRAIN).outputs["warnings"] if "GPUDirect" in w]
    assert "NCCL over TCP on all 9 gVNIC NICs (the host NIC and 8 GPU NICs on their own VPCs, MTU 8244)" in warning
    assert "`gpudirect.trust_google_images: true`" in warning and "`gpudirect.allow_secure_boot_off: true`" in warning


@pytest.mark.parametrize("overrides, field", [
    (["fabric=gpudirect", "gpudirect={}"], "gpudirect.trust_google_images"),
    (["fabric=gpudirect", "gpudirect={trust_google_images: true}"], "gpudirect.allow_secure_boot_off"),
])
def test_the_cli_refuses_forced_gpudirect_without_the_opt_in_naming_the_field(capsys, overrides, field):
    """`gpufleet plan` exits 2 with one message at the field that would allow TCPXO, and says what it accepts."""
    from gpufleet.plan.cli import main

    code = main(["plan", "gcp-train", "--json", *(item for o in overrides for item in ("--set", o))])
    out, err = capsys.readouterr()
    text = out + err
    assert code == 2 and "Traceback" not in text, text
    assert text.count("problem(s)") == 1 and f"`{field}`: got false" in text, text
    assert "Set it to accept that, or use `fabric: auto` (NCCL over TCP on all 9 gVNIC NICs" in text, text
