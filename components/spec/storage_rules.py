"""Rules for `storage:`, `access:` permissions and the existing-network fields: plain functions of the spec,
each returning a list of `Problem`, so the checking pipeline can run them with the other rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gpufleet.storage.catalog import storage_service

from .errors import Problem
from .model import ClusterSpec
from .permissions import AZURE_BUILTIN_ROLES

GUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
AZURE_ROLE_NAMES = ("AcrPull", "Reader", "Storage Blob Data Reader", "Storage Blob Data Contributor",
                    "Key Vault Secrets User", "Monitoring Metrics Publisher", "Owner", "Contributor",
                    "User Access Administrator")

ADMIN_AWS = re.compile(r":policy/(AdministratorAccess|PowerUserAccess|IAMFullAccess)$")
# By name and by role definition GUID (Microsoft's built-in roles table, "Privileged"): Owner, Contributor, User Access
# Administrator, Role Based Access Control Administrator.
ADMIN_AZURE = {"owner", "contributor", "user access administrator", "role based access control administrator",
               "8e3af657-a8ff-443c-a75c-2fe8c4bcb635", "b24988ac-6180-42a0-ab88-20f7382dd24c",
               "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9", "f58310d9-a9f6-439a-9e8d-f62e7b41a168"}
ADMIN_GCP = {"roles/owner", "roles/editor", "roles/resourcemanager.projectIamAdmin", "roles/iam.securityAdmin"}
# Google's lustre-client-binaries apt repository serves Ubuntu 22.04 (cluster-toolkit's Managed Lustre client
# install script: "The client modules currently only support Rocky 8, and Ubuntu 22.04").
GCP_LUSTRE_CLIENT_IMAGE = "ubuntu-22.04"
CLOUD_OF_FIELD = {"iam_policy_arns": "aws", "role_assignments": "azure", "service_account_roles": "gcp"}


def shared_tier(spec: ClusterSpec) -> int | None:
    """The throughput tier the filesystem gets: the spec's, or the service's default (None for NFS)."""
    shared = spec.storage.shared
    if shared is None or shared.kind != "lustre":
        return None
    return shared.throughput or storage_service(spec.cloud, "lustre").default_tier


def shared_capacity(spec: ClusterSpec) -> int | None:
    """The created filesystem's size in GiB: the spec's, or the smallest the service offers (None when elastic)."""
    shared = spec.storage.shared
    if shared is None or shared.existing_id:
        return None
    return shared.capacity_gib or storage_service(spec.cloud, shared.kind).sizing(shared_tier(spec)).smallest()


def shared_storage_fits_service(spec: ClusterSpec) -> list[Problem]:
    shared = spec.storage.shared
    if shared is None:
        return []
    service = storage_service(spec.cloud, shared.kind)
    problems = []
    if shared.kind == "lustre" and service.regions is not None and spec.region not in service.regions:
        problems.append(Problem("storage.shared.kind", "lustre", f"{service.service} is not offered in {spec.cloud} "
                                f"region {spec.region} (offered in: {', '.join(service.regions)}); use kind: nfs "
                                "or a region where it is offered"))
    if spec.cloud == "gcp" and shared.kind == "lustre" and spec.image.kind != GCP_LUSTRE_CLIENT_IMAGE:
        problems.append(Problem("storage.shared.kind", "lustre", f"Google publishes Managed Lustre client modules for "
                                f"Ubuntu 22.04 kernels only (lustre-client-binaries repository; the image.kind "
                                f"{spec.image.kind!r} is Ubuntu 24.04): set `image.kind: ubuntu-22.04`, or use kind: nfs"))
    if shared.throughput is not None:
        if shared.kind != "lustre":
            problems.append(Problem("storage.shared.throughput", shared.throughput,
                                    f"{service.service} has no throughput tiers; leave it unset for kind: nfs"))
        elif shared.throughput not in service.tiers:
            problems.append(Problem("storage.shared.throughput", shared.throughput, f"{service.service} offers "
                                    f"{', '.join(map(str, service.tiers))} MB/s per TiB"))
            return problems
    if shared.capacity_gib is not None:
        sizing = service.sizing(shared_tier(spec))
        if shared.existing_id:
            problems.append(Problem("storage.shared.capacity_gib", shared.capacity_gib,
                                    "an existing filesystem keeps its own size; leave capacity_gib unset with existing_id"))
        elif not sizing.accepts(shared.capacity_gib):
            tier = f" at {shared_tier(spec)} MB/s per TiB" if shared.kind == "lustre" else ""
            problems.append(Problem("storage.shared.capacity_gib", shared.capacity_gib,
                                    f"{service.service}{tier} takes {sizing.describe()}"))
        elif spec.cloud == "azure" and shared.kind == "lustre":
            problems += _amlfs_fits_subnet(spec, shared.capacity_gib)
    if shared.data_repository and (spec.cloud != "aws" or shared.kind != "lustre" or shared.existing_id):
        problems.append(Problem("storage.shared.data_repository", shared.data_repository,
                                "an S3 data repository links only to an FSx for Lustre filesystem gpufleet creates "
                                "(cloud: aws, kind: lustre, no existing_id)"))
    if shared.existing_id:
        problems += _existing_id_problems(spec, shared.kind, shared.existing_id)
    elif spec.cloud == "azure" and spec.network.existing_subnet_id:
        problems.append(Problem("storage.shared.existing_id", None, "with network.existing_subnet_id gpufleet cannot "
                                "place a new filesystem subnet in your VNet: create the filesystem there and give its "
                                "resource id as existing_id, or use network.existing_resource_group"))
    return problems


# Microsoft's "Network size requirements" for AMLFS (amlfs-prerequisites.md, read 2026-12-03): the largest capacity, in
# TiB, each filesystem subnet prefix holds (a rough estimate, Microsoft says).
AMLFS_TIB_BY_PREFIX = {27: 16, 26: 40, 25: 92, 24: 196, 23: 400}


def amlfs_subnet_prefix(vnet_prefix: int) -> int:
    """The prefix of the filesystem subnet gpufleet creates (azure/storage.py storage_subnet_cidr): a /24 in the VNet's
    second half, or that whole half in a VNet smaller than a /23."""
    return max(24, vnet_prefix + 1)


def _amlfs_fits_subnet(spec: ClusterSpec, capacity_gib: int) -> list[Problem]:
    prefix = amlfs_subnet_prefix(spec.network.cidr.prefixlen)
    limit_tib = AMLFS_TIB_BY_PREFIX.get(prefix, 0)
    if capacity_gib <= limit_tib * 1024:
        return []
    return [Problem("storage.shared.capacity_gib", capacity_gib, f"at most {limit_tib * 1024:,} GiB ({limit_tib} TiB): "
                    f"gpufleet puts Azure Managed Lustre in a /{prefix} subnet, which Microsoft sizes for up to "
                    f"{limit_tib} TiB; create a larger filesystem yourself in a bigger subnet and pass its existing_id")]


EXISTING_ID_FORMS = {
    ("aws", "lustre"): (re.compile(r"^fs-[0-9a-f]{8,17}$"), "an FSx file system id like fs-0123456789abcdef0"),
    ("aws", "nfs"): (re.compile(r"^fs-[0-9a-f]{8,17}$"), "an EFS file system id like fs-0123456789abcdef0"),
    ("azure", "lustre"): (re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.StorageCache/"
                                     r"amlFilesystems/[^/]+$", re.I), "an amlFilesystems resource id"),
    ("azure", "nfs"): (re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Storage/"
                                  r"storageAccounts/[a-z0-9]{3,24}/fileServices/default/shares/[a-z0-9-]{3,63}$", re.I),
                       "a file share resource id (.../storageAccounts/<account>/fileServices/default/shares/<share>)"),
    ("gcp", "lustre"): (re.compile(r"^projects/[^/]+/locations/(?P<location>[^/]+)/instances/[^/]+$"),
                        "projects/<project>/locations/<zone>/instances/<name>"),
    ("gcp", "nfs"): (re.compile(r"^projects/[^/]+/locations/(?P<location>[^/]+)/instances/[^/]+$"),
                     "projects/<project>/locations/<zone>/instances/<name>"),
}


def _existing_id_problems(spec: ClusterSpec, kind: str, existing_id: str) -> list[Problem]:
    pattern, form = EXISTING_ID_FORMS[(spec.cloud, kind)]
    match = pattern.match(existing_id)
    if not match:
        return [Problem("storage.shared.existing_id", existing_id, f"expected {form} for {kind} on {spec.cloud}")]
    location = match.groupdict().get("location")
    if location and spec.zone and location != spec.zone:
        return [Problem("storage.shared.existing_id", existing_id, f"the filesystem is in {location} but the nodes "
                        f"are in zone {spec.zone}; Lustre and Filestore traffic should stay in one zone: use a "
                        "filesystem in the nodes' zone")]
    return []


def admin_roles_are_opt_in(spec: ClusterSpec) -> list[Problem]:
    access = spec.access
    if access.allow_admin:
        return []
    problems = []
    for index, arn in enumerate(access.iam_policy_arns):
        if ADMIN_AWS.search(arn):
            problems.append(Problem(f"access.iam_policy_arns[{index}]", arn, "an administrator policy on every GPU "
                                    "node needs `access.allow_admin: true`; grant a narrower policy"))
    for index, grant in enumerate(access.role_assignments):
        if grant.role.strip().lower() in ADMIN_AZURE or grant.role.rsplit("/", 1)[-1].lower() in ADMIN_AZURE:
            problems.append(Problem(f"access.role_assignments[{index}].role", grant.role, "Owner, Contributor and "
                                    "access-administrator roles need `access.allow_admin: true`; grant a narrower role"))
    for index, account_role in enumerate(access.service_account_roles):
        if account_role.role in ADMIN_GCP:
            problems.append(Problem(f"access.service_account_roles[{index}].role", account_role.role, "roles/owner, "
                                    "roles/editor and IAM admin roles need `access.allow_admin: true`; grant a "
                                    "narrower role"))
    return problems


def permissions_fit_cloud(spec: ClusterSpec) -> list[Problem]:
    problems = []
    for field, cloud in CLOUD_OF_FIELD.items():
        value = getattr(spec.access, field)
        if value and spec.cloud != cloud:
            problems.append(Problem(f"access.{field}", f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}",
                                    f"only for cloud: {cloud}; on {spec.cloud} use access."
                                    f"{next(f for f, c in CLOUD_OF_FIELD.items() if c == spec.cloud)}"))
    if spec.cloud == "azure":
        for index, grant in enumerate(spec.access.role_assignments):
            if not (grant.role.lower() in AZURE_BUILTIN_ROLES or GUID.match(grant.role)
                    or grant.role.lower().startswith("/subscriptions/")):
                problems.append(Problem(f"access.role_assignments[{index}].role", grant.role, "a role definition "
                                        "GUID or id, or one of the built-in roles gpufleet knows by name: "
                                        + ", ".join(sorted(AZURE_ROLE_NAMES))))
        for index, name in enumerate(spec.access.buckets_read):
            if not re.match(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Storage/"
                            r"storageAccounts/[a-z0-9]{3,24}(/blobServices/default/containers/[a-z0-9-]{3,63})?$",
                            name, re.I):
                problems.append(Problem(f"access.buckets_read[{index}]", name, "on Azure a storage account (or "
                                        "container) resource id, /subscriptions/.../storageAccounts/<name>"))
    else:
        for index, name in enumerate(spec.access.buckets_read):
            if not re.match(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$", name):
                problems.append(Problem(f"access.buckets_read[{index}]", name, "a bucket name (3-63 lowercase "
                                        "letters, digits, '.', '_' or '-'), without s3:// or gs://"))
    return problems


NETWORK_FIELD_CLOUD = {"existing_vpc_id": "aws", "existing_resource_group": "azure", "existing_network": "gcp",
                       "existing_subnetwork": "gcp"}


def existing_network_fits_cloud(spec: ClusterSpec) -> list[Problem]:
    network = spec.network
    problems = [Problem(f"network.{field}", getattr(network, field), f"only for cloud: {cloud}")
                for field, cloud in NETWORK_FIELD_CLOUD.items() if getattr(network, field) and spec.cloud != cloud]
    if network.existing_vpc_id and not re.match(r"^vpc-[0-9a-f]{8,17}$", network.existing_vpc_id):
        problems.append(Problem("network.existing_vpc_id", network.existing_vpc_id, "a VPC id like vpc-0123456789abcdef0"))
    if network.existing_vpc_id and network.existing_subnet_id:
        problems.append(Problem("network.existing_vpc_id", network.existing_vpc_id, "give either existing_vpc_id "
                                "(gpufleet creates the subnet) or existing_subnet_id (gpufleet creates none), not both"))
    if spec.cloud == "gcp" and bool(network.existing_network) != bool(network.existing_subnetwork):
        missing = "existing_subnetwork" if network.existing_network else "existing_network"
        problems.append(Problem(f"network.{missing}", None, "existing_network and existing_subnetwork go together: "
                                "the primary NIC needs both"))
    if spec.cloud == "gcp" and network.existing_subnet_id:
        problems.append(Problem("network.existing_subnet_id", network.existing_subnet_id,
                                "on GCP use network.existing_network and network.existing_subnetwork"))
    if spec.cloud == "azure" and network.existing_resource_group and network.existing_subnet_id:
        problems.append(Problem("network.existing_resource_group", network.existing_resource_group,
                                "with existing_subnet_id the resources go into the subnet's resource group; give one"))
    return problems


STORAGE_RULES: tuple[Callable[[ClusterSpec], list[Problem]], ...] = (
    shared_storage_fits_service,
    admin_roles_are_opt_in,
    permissions_fit_cloud,
    existing_network_fits_cloud,
)
