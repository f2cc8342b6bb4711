"""AWS user data by reference: a boothook that fetches the node's cloud-config from S3.

EC2 takes 16 KB of user data. A node whose cloud-config does not fit even gzipped (health checks, shared storage,
local NVMe, the watcher) gets a small boothook instead; the cloud-config itself is an S3 object in the cluster's
bucket, named by its SHA-256 (`node_config_key`), which the AWS component declares. The boothook
(`boothooks/aws-node-config.sh`) signs the GetObject with gpufleet-aws as the node, checks the digest and installs the
config where cloud-init reads it again before its modules run, so the node boots exactly as with inline user data.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

from .encode import LIMITS, measured_size
from .parts import FILES_DIR, shipped
from .storage import SOURCE_PLACEHOLDER

BOOTHOOK = Path(__file__).parent / "boothooks" / "aws-node-config.sh"
AWS_API_SOURCE = "usr/local/sbin/gpufleet-aws"
# Where gpufleet-aws is written at each boot that fetches (a tmpfs: not a file the node keeps); tests move it.
BOOTSTRAP_DIR = "/run/gpufleet-bootstrap"
HEREDOC_END = "GPUFLEET_AWS_API_EOF"
NODE_CONFIG_PREFIX = "gpufleet/node-config/"
# A created filesystem's address replaces each storage placeholder after the choice is made
# (gpufleet.storage.boot.user_data_with_source): room for a long address (an FSx DNS name and mount name) each.
ADDRESS_ROOM_BYTES = 128


def fits_inline(cloud_config: str, cloud: str = "aws") -> bool:
    """Whether `cloud_config` fits the cloud's user-data field as it is, with room for the filesystem address."""
    limit, _ = LIMITS[cloud]
    room = ADDRESS_ROOM_BYTES * cloud_config.count(SOURCE_PLACEHOLDER)
    return measured_size(cloud_config, cloud) + room <= limit


def node_config_sha256(cloud_config: str) -> str:
    return hashlib.sha256(cloud_config.encode("utf-8")).hexdigest()


def node_config_key(cloud_config: str) -> str:
    """The S3 key of `cloud_config`: content-addressed, so a changed config is a new object and a new launch
    template version, and nodes already running keep the object they booted from until the old one is deleted."""
    return f"{NODE_CONFIG_PREFIX}{node_config_sha256(cloud_config)}.yaml"


def aws_bootstrap(bucket: str, cloud_config: str, s3_endpoint: str = "") -> str:
    """The boothook for `cloud_config` stored at `node_config_key(cloud_config)` in `bucket`.

    `s3_endpoint` is a path-style S3 URL for tests (a fake S3 in a VM); empty means the bucket's regional endpoint.
    """
    api = shipped((FILES_DIR / AWS_API_SOURCE).read_text(), AWS_API_SOURCE)
    if HEREDOC_END in api:
        raise ValueError(f"{AWS_API_SOURCE} contains the heredoc delimiter {HEREDOC_END}")
    body = BOOTHOOK.read_text()
    shebang, _, rest = body.partition("\n")
    settings = [
        f"NODE_CONFIG_BUCKET={shlex.quote(bucket)}",
        f"NODE_CONFIG_KEY={shlex.quote(node_config_key(cloud_config))}",
        f"NODE_CONFIG_SHA256={node_config_sha256(cloud_config)}",
        f"GPUFLEET_AWS=${{GPUFLEET_BOOTSTRAP_DIR:-{BOOTSTRAP_DIR}}}/gpufleet-aws",
        *([f"GPUFLEET_S3_ENDPOINT={shlex.quote(s3_endpoint)}", "export GPUFLEET_S3_ENDPOINT"] if s3_endpoint else []),
        'mkdir -p "${GPUFLEET_AWS%/*}"',
        f"cat >\"$GPUFLEET_AWS\" <<'{HEREDOC_END}'",
        api.rstrip("\n"),
        HEREDOC_END,
    ]
    code = [line for line in rest.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    pointer = "# gpufleet: cloud_init/boothooks/aws-node-config.sh (comments are in the source)"
    return "\n".join(["#cloud-boothook", shebang, pointer, *settings, *code]) + "\n"
