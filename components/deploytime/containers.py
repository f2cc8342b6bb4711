"""The containers nodes run, pinned by digest: `REGISTRY/REPOSITORY:TAG@sha256:<hex>`.

A tag can be moved to other bytes; a digest cannot, and Docker and containerd check what they pull against it. No
digest for the tags gpufleet ships could be confirmed from a public source here (cloud_init/README.md), so each tag
is resolved through its registry (`oci.tag_digest`) when `pulumi up` builds the node's user data, and the user data
names the digest. Each node script that starts a container refuses an image that is not pinned by digest. A
reference that already names a digest (`inference.triton_image_digest`) is kept as given.

Offline (the plan, and any caller that does not ask for pinning) the digest is a stand-in (`stand_in_digest`): the
sha256 of `resolved-at-pulumi-up:<reference>`, as long and as incompressible as a real digest, so the plan measures
the user data `pulumi up` will send against the cloud's limit (an AWS config near 16 KB must not fit in the plan and
go to S3 at deploy). The plan says so in a note; the registry's digest replaces it at `pulumi up`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import lru_cache

import pulumi

from .lookups import RESOLVED_AT_DEPLOY, lookups_enabled
from .oci import DigestError, tag_digest

Pin = Callable[[str], str]
"""Maps an image reference to the reference the node runs."""


def stand_in_digest(reference: str) -> str:
    """The offline plan's digest for `reference`: stable, derived from the tag, never a registry's answer."""
    return "sha256:" + hashlib.sha256(f"{RESOLVED_AT_DEPLOY}:{reference}".encode()).hexdigest()


def deferred_digest(reference: str) -> str:
    """`reference` with the offline stand-in digest, unless it names a digest already."""
    return reference if "@" in reference else f"{reference}@{stand_in_digest(reference)}"


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
