"""The containers nodes run, pinned by digest: `REGISTRY/REPOSITORY:TAG@sha256:<hex>`.

A tag can be moved to other bytes; a digest cannot, and Docker and containerd check what they pull against it. No
digest for the tags gpufleet ships could be confirmed from a public source here (cloud_init/README.md), so each tag
is resolved through its registry (`oci.tag_digest`) when `pulumi up` builds the node's user data, and the user data
names the digest. Each node then refuses to run an image that is not pinned by digest (`pinned_image` in the node's
common.sh). A reference that already names a digest (`inference.triton_image_digest`) is kept as given.

Offline (the plan, and any caller that does not ask for pinning) the digest is `PLACEHOLDER_DIGEST`, a marked
stand-in of a real digest's length, so the user data's size is what `pulumi up` will send.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import pulumi

from .lookups import RESOLVED_AT_DEPLOY, lookups_enabled
from .oci import DigestError, tag_digest

PLACEHOLDER_DIGEST = f"sha256:{RESOLVED_AT_DEPLOY:-<64}"

Pin = Callable[[str], str]
"""Maps an image reference to the reference the node runs."""


def deferred_digest(reference: str) -> str:
    """`reference` with the offline stand-in digest, unless it names a digest already."""
    return reference if "@" in reference else f"{reference}@{PLACEHOLDER_DIGEST}"


def registry_digest(reference: str) -> str:
    """`reference` pinned to the digest its registry gives for the tag now (stand-in when lookups are off)."""
    if "@" in reference or not lookups_enabled():
        return deferred_digest(reference)
    return _pinned(reference)


@lru_cache(maxsize=64)
def _pinned(reference: str) -> str:
    """One registry round trip per tag and run: every node group of a stack runs the same bytes."""
    try:
        return f"{reference}@{tag_digest(reference)}"
    except DigestError as err:
        raise pulumi.RunError(f"cannot pin container image {reference} by digest: {err}. `pulumi up` reads the "
                              "digest from the image's public registry: allow HTTPS to it from where Pulumi runs"
                              ) from None
