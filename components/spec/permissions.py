"""Node permissions in `access:`: what the nodes' identity may do beyond gpufleet's own minimum.

Per cloud: AWS managed/customer policy ARNs on the node role, Azure role assignments for the scale set's identity,
GCP roles for the node service account (project-wide, or on named buckets). Admin roles need `allow_admin`.
The ready-made opt-ins (`container_registry_read`, `buckets_read`) map to each cloud's read-only roles.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from .strict import StrictModel

BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")


class RoleAssignment(StrictModel):
    """One Azure RBAC role for the nodes' identity at one scope."""

    role: str = Field(min_length=1, examples=["Storage Blob Data Reader"])
    """A built-in role name ("Storage Blob Data Reader") or a role definition id."""
    scope: str = Field(min_length=1)
    """The resource id the role applies to, e.g. a storage account's id."""


class ServiceAccountRole(StrictModel):
    """One GCP role for the node service account, on the project or on one bucket."""

    role: str = Field(pattern=r"^(roles/[A-Za-z0-9_.]+|projects/[^/]+/roles/[A-Za-z0-9_.]+|organizations/[0-9]+/roles/[A-Za-z0-9_.]+)$",
                      examples=["roles/storage.objectViewer"])
    """e.g. "roles/storage.objectViewer"."""
    bucket: str | None = None
    """Grant it on this Cloud Storage bucket only. Default: on the project."""


class NodePermissions(StrictModel):
    """The node identity's extra permissions (mixed into `access`)."""

    iam_policy_arns: list[str] = Field(default_factory=list)
    """AWS: IAM policy ARNs attached to the node role, e.g. arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess. Default: none."""
    role_assignments: list[RoleAssignment] = Field(default_factory=list)
    """Azure: `{role, scope}` assignments for the scale set's managed identity. Default: none."""
    service_account_roles: list[ServiceAccountRole] = Field(default_factory=list)
    """GCP: `{role, bucket?}` roles for the node service account (project level unless a bucket is named). Default: none."""
    allow_admin: bool = False
    """Explicit opt-in before AdministratorAccess, Owner, Contributor-like admin roles, roles/owner or roles/editor may be granted. Default: false."""
    container_registry_read: bool = False
    """Let nodes pull images: AWS ECR read-only, Azure AcrPull (on the resource group), GCP Artifact Registry reader. Default: false."""
    buckets_read: list[str] = Field(default_factory=list)
    """Read-only access to these buckets (S3 bucket, GCS bucket; on Azure a storage account resource id). Default: none."""

    @field_validator("iam_policy_arns")
    @classmethod
    def _are_policy_arns(cls, arns: list[str]) -> list[str]:
        for arn in arns:
            if not re.match(r"^arn:aws[a-z-]*:iam::(aws|[0-9]{12}):policy/[\w+=,.@/-]+$", arn):
                raise ValueError(f"{arn!r} is not an IAM policy ARN like arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")
        return arns


# Azure built-in roles gpufleet accepts by name (lowercase) -> role definition GUID. Each GUID re-read on 2026-12-03 from
# MicrosoftDocs/azure-docs articles/role-based-access-control/built-in-roles.md @ 00a58329 (ms.date 04/09/2026);
# tests/spec/test_azure_role_ids.py pins them and the copies in azure/private_vm.py and azure/serving.py.
AZURE_BUILTIN_ROLES = {
    "acrpull": "7f951dda-4ed3-4680-a7ca-43fe172d538d",
    "reader": "acdd72a7-3385-48ef-bd42-f606fba81ae7",
    "storage blob data reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    "storage blob data contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    "key vault secrets user": "4633458b-17de-408a-b874-0445c86b69e6",
    "monitoring metrics publisher": "3913510d-42f4-4e42-8a64-420c390055eb",
    "owner": "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
    "contributor": "b24988ac-6180-42a0-ab88-20f7382dd24c",
    "user access administrator": "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
}
