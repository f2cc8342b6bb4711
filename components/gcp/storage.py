"""`storage.shared` on GCP: Managed Lustre or Filestore in the nodes' zone, on the primary VPC.

- Lustre: Managed Lustre needs private services access on the VPC (Managed Lustre "Configure a VPC network"):
  a /20 range reserved for VPC peering, the Service Networking connection, and one ingress rule admitting TCP 988
  from that range to the nodes' service account only. The instance has the spec's capacity and per-unit throughput.
- NFS: a Filestore BASIC_SSD instance with one share `shared`, directly peered with the primary VPC. The nodes open
  the connections (to 2049) and GCP firewalls are stateful with egress allowed, so no rule is added.
- `existing_id` (projects/<p>/locations/<zone>/instances/<name>): nothing is created; the mount point is looked up.
  The spec rules already refused an instance in another zone than the nodes'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from ..spec import ClusterSpec
from ..spec.storage_rules import shared_capacity, shared_tier
from .labels import Describer, short_name

PEERING_PREFIX = 20
LUSTRE_FILESYSTEM = "lustrefs"
FILESTORE_SHARE = "shared"
FILESTORE_TIER = "BASIC_SSD"
EXISTING = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/instances/(?P<name>[^/]+)$")


@dataclass(frozen=True)
class SharedFilesystem:
    id: pulumi.Input[str]
    source: pulumi.Output[str]


def build_shared_storage(name: str, stack: str, spec: ClusterSpec, network_id: pulumi.Input[str],
                         network_name: pulumi.Input[str], node_account_email: pulumi.Input[str],
                         describe: Describer, opts: pulumi.ResourceOptions) -> SharedFilesystem | None:
    shared = spec.storage.shared
    if shared is None:
        return None
    if shared.existing_id:
        return _existing(shared.kind, shared.existing_id, opts)
    if shared.kind == "nfs":
        return _filestore(name, stack, spec, network_name, describe, opts)
    return _lustre(name, stack, spec, network_id, node_account_email, describe, opts)


def _lustre(name: str, stack: str, spec: ClusterSpec, network_id: pulumi.Input[str],
            node_account_email: pulumi.Input[str], describe: Describer,
            opts: pulumi.ResourceOptions) -> SharedFilesystem:
    peering = gcp.compute.GlobalAddress(
        f"{name}-lustre-range", name=short_name(f"{name}-{stack}-lustre", 63), purpose="VPC_PEERING",
        address_type="INTERNAL", prefix_length=PEERING_PREFIX, network=network_id,
        description=describe("lustre-range"), opts=opts)
    connection = gcp.servicenetworking.Connection(
        f"{name}-lustre-peering", network=network_id, service="servicenetworking.googleapis.com",
        reserved_peering_ranges=[peering.name], opts=opts)
    gcp.compute.Firewall(
        f"{name}-fw-lustre", network=network_id, direction="INGRESS", priority=1000,
        allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["988"])],
        source_ranges=[pulumi.Output.concat(peering.address, f"/{PEERING_PREFIX}")],
        target_service_accounts=[node_account_email],
        description=f"Lustre (988) from the Managed Lustre range to the nodes; {describe('fw-lustre')}", opts=opts)
    instance = gcp.lustre.Instance(
        f"{name}-lustre", instance_id=short_name(f"{name}-{stack}", 63), location=spec.zone,
        filesystem=LUSTRE_FILESYSTEM, capacity_gib=str(shared_capacity(spec)), network=network_id,
        per_unit_storage_throughput=str(shared_tier(spec)), description=describe("lustre"),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[connection])))
    return SharedFilesystem(id=instance.id, source=instance.mount_point)


def _filestore(name: str, stack: str, spec: ClusterSpec, network_name: pulumi.Input[str], describe: Describer,
               opts: pulumi.ResourceOptions) -> SharedFilesystem:
    instance = gcp.filestore.Instance(
        f"{name}-filestore", name=short_name(f"{name}-{stack}", 63), location=spec.zone, tier=FILESTORE_TIER,
        file_shares=gcp.filestore.InstanceFileSharesArgs(name=FILESTORE_SHARE, capacity_gb=shared_capacity(spec)),
        networks=[gcp.filestore.InstanceNetworkArgs(network=network_name, modes=["MODE_IPV4"],
                                                    connect_mode="DIRECT_PEERING")],
        description=describe("filestore"), opts=opts)
    address = instance.networks.apply(lambda networks: networks[0].ip_addresses[0])
    return SharedFilesystem(id=instance.id, source=pulumi.Output.concat(address, f":/{FILESTORE_SHARE}"))


def _existing(kind: str, existing_id: str, opts: pulumi.ResourceOptions) -> SharedFilesystem:
    parts = EXISTING.match(existing_id).groupdict()
    invoke = pulumi.InvokeOutputOptions(parent=opts.parent, provider=opts.provider)
    if kind == "lustre":
        found = gcp.lustre.get_instance_output(instance_id=parts["name"], zone=parts["location"],
                                               project=parts["project"], opts=invoke)
        return SharedFilesystem(id=existing_id, source=found.mount_point)
    found = gcp.filestore.get_instance_output(name=parts["name"], location=parts["location"],
                                              project=parts["project"], opts=invoke)
    source = pulumi.Output.all(found.networks, found.file_shares).apply(
        lambda values: f"{values[0][0].ip_addresses[0]}:/{values[1][0].name}")
    return SharedFilesystem(id=existing_id, source=source)
