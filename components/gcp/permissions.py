"""Extra roles for the node service account (`access:`), project-wide or on named buckets.

- `service_account_roles`: `{role}` on the project, `{role, bucket}` on that bucket only;
- `container_registry_read`: roles/artifactregistry.reader on the project (image pulls);
- `buckets_read`: roles/storage.objectViewer on each bucket.
Admin roles were refused by the spec rules unless `access.allow_admin`.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..spec import ClusterSpec

ARTIFACT_REGISTRY_READER = "roles/artifactregistry.reader"
OBJECT_VIEWER = "roles/storage.objectViewer"


def role_grants(spec: ClusterSpec) -> list[tuple[str, str | None]]:
    """(role, bucket or None for the project), in a fixed order."""
    grants = [(grant.role, grant.bucket) for grant in spec.access.service_account_roles]
    if spec.access.container_registry_read:
        grants.append((ARTIFACT_REGISTRY_READER, None))
    grants += [(OBJECT_VIEWER, bucket) for bucket in spec.access.buckets_read]
    return list(dict.fromkeys(grants))


def grant_node_roles(name: str, spec: ClusterSpec, project: pulumi.Input[str], node_account_email: pulumi.Input[str],
                     opts: pulumi.ResourceOptions) -> list[str]:
    member = pulumi.Output.concat("serviceAccount:", node_account_email)
    granted = []
    for index, (role, bucket) in enumerate(role_grants(spec)):
        if bucket is None:
            gcp.projects.IAMMember(f"{name}-sa-role-{index}", project=project, role=role, member=member, opts=opts)
            granted.append(role)
        else:
            gcp.storage.BucketIAMMember(f"{name}-sa-bucket-{index}", bucket=bucket, role=role, member=member, opts=opts)
            granted.append(f"{role} on gs://{bucket}")
    return granted
