"""`storage.shared` on AWS: FSx for Lustre (PERSISTENT_2) or EFS, in the nodes' subnet and AZ, reachable only from
the nodes' security group.

- Lustre: FSx for Lustre PERSISTENT_2 SSD with the spec's per-unit throughput, LZ4 compression, in the node subnet.
  Its own security group admits TCP 988 and 1018-1023 from the nodes and from itself (the file servers talk to each
  other; AWS FSx "File system access control with Amazon VPC"), and nothing else; the nodes' group admits the same
  ports from the filesystem's group only (the servers call clients back). An optional S3 data repository
  association links `data_repository` at /data, importing and exporting new, changed and deleted objects.
- NFS: an encrypted EFS filesystem (elastic throughput) with one mount target in the node subnet; its security
  group admits TCP 2049 from the nodes only.
- `existing_id`: nothing is created. The address is looked up (FSx through Cloud Control, EFS through
  DescribeFileSystems) and, for FSx, its subnet's AZ is checked against `zone` at deploy time. The existing
  filesystem's own security group must admit the node security group (it is not changed); the nodes admit the
  Lustre ports from the VPC range, since the existing filesystem's group is not known. An existing EFS needs a
  mount target in the nodes' AZ (EFS allows one per AZ, so gpufleet does not add one).
The nodes' security group already allows all egress, so no node rule is added.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ..spec import ClusterSpec
from ..spec.storage_rules import shared_capacity, shared_tier
from .tagging import Tagger

LUSTRE_PORTS = ((988, 988), (1018, 1023))
NFS_PORTS = ((2049, 2049),)
LUSTRE_VERSION = "2.15"
DATA_REPOSITORY_PATH = "/data"
S3_EVENTS = ["NEW", "CHANGED", "DELETED"]


@dataclass(frozen=True)
class SharedFilesystem:
    """What the nodes and the outputs need: the fstab source and the filesystem's id."""

    id: pulumi.Input[str]
    source: pulumi.Output[str]
    security_group_id: pulumi.Input[str] | None


def build_shared_storage(name: str, spec: ClusterSpec, vpc_id: pulumi.Input[str], subnet_id: pulumi.Input[str],
                         node_group_id: pulumi.Input[str], vpc_cidr: pulumi.Input[str], tag: Tagger,
                         opts: pulumi.ResourceOptions) -> SharedFilesystem | None:
    shared = spec.storage.shared
    if shared is None:
        return None
    if shared.existing_id:
        if shared.kind == "lustre":
            _lustre_callbacks_from(name, node_group_id, {"cidr_ipv4": vpc_cidr}, "the VPC (existing FSx)", tag, opts)
        return _existing(shared.kind, shared.existing_id, spec.zone or "", opts)
    lustre = shared.kind == "lustre"
    group = aws.ec2.SecurityGroup(f"{name}-fs-sg", vpc_id=vpc_id, tags=tag("fs-sg"), opts=opts, description=(
        "gpufleet shared filesystem: Lustre 988, 1018-1023 from the nodes" if lustre else
        "gpufleet shared filesystem: NFS 2049 from the nodes"))
    sources = {"nodes": node_group_id, **({"self": group.id} if lustre else {})}
    for low, high in (LUSTRE_PORTS if lustre else NFS_PORTS):
        for who, source in sources.items():
            role = f"fs-sg-{who}-{low}"
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-{role}", security_group_id=group.id, ip_protocol="tcp", from_port=low, to_port=high,
                referenced_security_group_id=source, description=f"{shared.kind} from the {who}", tags=tag(role),
                opts=opts)
        if lustre:
            role = f"fs-sg-out-{low}"
            aws.vpc.SecurityGroupEgressRule(
                f"{name}-{role}", security_group_id=group.id, ip_protocol="tcp", from_port=low, to_port=high,
                referenced_security_group_id=group.id, description="Lustre between the file servers",
                tags=tag(role), opts=opts)
    if lustre:
        _lustre_callbacks_from(name, node_group_id, {"referenced_security_group_id": group.id}, "the filesystem", tag,
                               opts)
        return _fsx(name, spec, subnet_id, group, tag, opts)
    return _efs(name, subnet_id, group, tag, opts)


def _lustre_callbacks_from(name: str, node_group_id: pulumi.Input[str], source: dict, what: str, tag: Tagger,
                           opts: pulumi.ResourceOptions) -> None:
    """The file servers call clients back on the Lustre ports (AWS FSx access control): admit them on the nodes."""
    for low, high in LUSTRE_PORTS:
        role = f"sg-lustre-{low}"
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-{role}", security_group_id=node_group_id, ip_protocol="tcp", from_port=low, to_port=high,
            description=f"Lustre from {what}", tags=tag(role), opts=opts, **source)


def _fsx(name: str, spec: ClusterSpec, subnet_id: pulumi.Input[str], group: aws.ec2.SecurityGroup, tag: Tagger,
         opts: pulumi.ResourceOptions) -> SharedFilesystem:
    filesystem = aws.fsx.LustreFileSystem(
        f"{name}-fsx", deployment_type="PERSISTENT_2", storage_type="SSD", storage_capacity=shared_capacity(spec),
        per_unit_storage_throughput=shared_tier(spec), subnet_ids=subnet_id, security_group_ids=[group.id],
        file_system_type_version=LUSTRE_VERSION, data_compression_type="LZ4", copy_tags_to_backups=True,
        tags=tag("fsx"), opts=opts)
    repository = spec.storage.shared.data_repository
    if repository:
        aws.fsx.DataRepositoryAssociation(
            f"{name}-fsx-s3", file_system_id=filesystem.id, data_repository_path=repository,
            file_system_path=DATA_REPOSITORY_PATH, batch_import_meta_data_on_create=True,
            s3=aws.fsx.DataRepositoryAssociationS3Args(
                auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(events=S3_EVENTS),
                auto_export_policy=aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=S3_EVENTS)),
            tags=tag("fsx-s3"), opts=opts)
    source = pulumi.Output.concat(filesystem.dns_name, "@tcp:/", filesystem.mount_name)
    return SharedFilesystem(id=filesystem.id, source=source, security_group_id=group.id)


def _efs(name: str, subnet_id: pulumi.Input[str], group: aws.ec2.SecurityGroup, tag: Tagger,
         opts: pulumi.ResourceOptions) -> SharedFilesystem:
    filesystem = aws.efs.FileSystem(f"{name}-efs", encrypted=True, performance_mode="generalPurpose",
                                    throughput_mode="elastic", tags=tag("efs"), opts=opts)
    target = aws.efs.MountTarget(f"{name}-efs-mount", file_system_id=filesystem.id, subnet_id=subnet_id,
                                 security_groups=[group.id], opts=opts)
    # The mount target's own output, so the nodes' template waits until the target exists.
    source = pulumi.Output.concat(target.dns_name, ":/")
    return SharedFilesystem(id=filesystem.id, source=source, security_group_id=group.id)


def zone_matches(zone: str, az_name: str, az_id: str) -> bool:
    return zone in (az_name, az_id)


def _existing(kind: str, existing_id: str, zone: str, opts: pulumi.ResourceOptions) -> SharedFilesystem:
    invoke = pulumi.InvokeOutputOptions(parent=opts.parent, provider=opts.provider)
    if kind == "nfs":
        found = aws.efs.get_file_system_output(file_system_id=existing_id, opts=invoke)
        return SharedFilesystem(id=existing_id, source=pulumi.Output.concat(found.dns_name, ":/"),
                                security_group_id=None)
    described = aws.cloudcontrol.get_resource_output(type_name="AWS::FSx::FileSystem", identifier=existing_id,
                                                     opts=invoke)
    properties = described.properties.apply(json.loads)
    subnet = aws.ec2.get_subnet_output(id=properties.apply(lambda p: p["SubnetIds"][0]), opts=invoke)

    def checked(values: list) -> str:
        props, az_name, az_id = values
        if not zone_matches(zone, az_name, az_id):
            raise pulumi.RunError(f"`storage.shared.existing_id`: FSx filesystem {existing_id} is in {az_name} "
                                  f"({az_id}) but the nodes are in zone {zone}; Lustre traffic between zones is slow "
                                  "and billed: use a filesystem in the nodes' zone")
        return f"{props['DNSName']}@tcp:/{props['LustreMountName']}"

    source = pulumi.Output.all(properties, subnet.availability_zone, subnet.availability_zone_id).apply(checked)
    return SharedFilesystem(id=existing_id, source=source, security_group_id=None)
