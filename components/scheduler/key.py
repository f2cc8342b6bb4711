"""The cluster's munge key: 1024 random bytes, base64, generated once per cluster as a Pulumi secret.

No `pulumi_random` (not a dependency): the key is drawn here on every run, and each cloud's secret-store resource
that holds it ignores later changes of its value (`ignore_changes`), so the value drawn at the first `pulumi up`
is the one the store keeps for the cluster's life. Pulumi encrypts it in state and masks it in previews and plans;
the controller and the nodes read it from the store with their own identities.
"""

from __future__ import annotations

import base64
import secrets

import pulumi

KEY_BYTES = 1024  # munge's own `mungekey` default size
IGNORE_VALUE = {"aws": ["value"], "azure": ["properties"], "gcp": ["secret_data"]}
"""The property of each cloud's secret version resource that holds the key."""


def munge_key() -> pulumi.Output[str]:
    return pulumi.Output.secret(base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode())


def keep_first_value(cloud: str, opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """`opts` with the store resource's value frozen after creation: a new draw never rotates the cluster's key."""
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=IGNORE_VALUE[cloud]))
