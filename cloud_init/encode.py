"""Each cloud's user-data encoding and size limit, in one place.

- AWS: "User data is limited to 16 KB, in raw form, before it is base64-encoded". gpufleet gzips the cloud-config
  (cloud-init detects gzip) and base64-encodes it for the launch template, so the limit applies to the gzip bytes.
- Azure: `customData` is base64 of at most 65535 bytes. gpufleet gzips the cloud-config there too: cloud-init
  inflates gzip user data on every datasource ("User-data formats": gzip compressed content), so the limit applies
  to the gzip bytes, about a quarter of the text.
- GCP: a metadata value (`user-data`, read by cloud-init's GCE datasource) is at most 262144 bytes.
Sources: shared/reference/node-software-stack.md section 7.1.
"""

from __future__ import annotations

import base64
from functools import lru_cache

import zopfli
import zopfli.gzip

from .content_cache import cached_bytes

AWS_USER_DATA_MAX_BYTES = 16384  # after gzip, before base64
AZURE_CUSTOM_DATA_MAX_BYTES = 65535  # after gzip, before base64
GCP_METADATA_VALUE_MAX_BYTES = 262144  # raw

GZIPPED = ("aws", "azure")
LIMITS = {
    "aws": (AWS_USER_DATA_MAX_BYTES, "gzip-compressed bytes"),
    "azure": (AZURE_CUSTOM_DATA_MAX_BYTES, "gzip-compressed bytes"),
    "gcp": (GCP_METADATA_VALUE_MAX_BYTES, "raw bytes"),
}


ZOPFLI_ITERATIONS = 5  # 15 saves 1-2 bytes of 16 KB at twice the time


@lru_cache(maxsize=64)
def gzip_deterministic(data: bytes) -> bytes:
    """gzip with mtime 0 and no file name, so equal input gives equal bytes. Zopfli writes ordinary gzip (cloud-init
    inflates it like any other) about 3% smaller than zlib's best level: room for real work in AWS's 16 KB.

    Cached in the process (a plan measures the same user data, encodes it and may encode it again with a
    filesystem's address) and on disk by content (a stack planned again, or at another size, gzips the same
    documents): zopfli spends about 0.06 s on each."""
    return cached_bytes("zopfli", _ZOPFLI_SALT, data,
                        lambda: zopfli.gzip.compress(data, numiterations=ZOPFLI_ITERATIONS))


# zopfli's output is a function of its version, the iterations and the input (it is single-threaded, no timestamps).
_ZOPFLI_SALT = f"zopfli {getattr(zopfli, '__version__', 'unknown')} numiterations={ZOPFLI_ITERATIONS} gzip mtime=0"


def measured_size(text: str, cloud: str) -> int:
    """The size the cloud's limit applies to."""
    raw = text.encode("utf-8")
    return len(gzip_deterministic(raw)) if cloud in GZIPPED else len(raw)


def encode_user_data(text: str, cloud: str) -> str:
    """User data in the form `cloud`'s API takes; raises ValueError when it is over the cloud's limit.

    aws: base64 of gzip (for `LaunchTemplate.userData`); azure: base64 of gzip (`customData`);
    gcp: the text itself (metadata key `user-data`).
    """
    if cloud not in LIMITS:
        raise ValueError(f"unknown cloud {cloud!r}; expected one of {', '.join(LIMITS)}")
    limit, unit = LIMITS[cloud]
    size = measured_size(text, cloud)
    if size > limit:
        raise ValueError(f"{cloud} user data is {size} {unit}, over the limit of {limit}; turn off node options "
                         "(exporters, health extras, MPS/MIG) or shorten `node.nccl.env` and `node.spot.drain_command`")
    raw = text.encode("utf-8")
    if cloud in GZIPPED:
        return base64.b64encode(gzip_deterministic(raw)).decode("ascii")
    return text
