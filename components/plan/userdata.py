"""Finds each node group's user data in the declared inputs and decodes it (base64, gzip) for `--out`, including an
AWS cloud-config stored in S3 for the launch template's boothook (`gpufleet.aws.node_config`)."""

from __future__ import annotations

import base64
import binascii
import gzip
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gpufleet.cloud_init.s3_bootstrap import NODE_CONFIG_PREFIX

from .mocks import DeclaredResource


@dataclass(frozen=True)
class NamedInputs:
    """A resource read back from a plan document: its name and inputs are all user data decoding needs."""

    name: str
    inputs: dict

USER_DATA_KEYS = ("userData", "userDataBase64", "customData", "user-data")
GZIP_MAGIC = b"\x1f\x8b"


def node_user_data(resources: Sequence[DeclaredResource | NamedInputs]) -> dict[str, str]:
    """{resource name: decoded cloud-config} for every resource that carries user data."""
    found = {}
    for resource in resources:
        for value in _user_data_values(resource.inputs):
            found[resource.name] = decode_user_data(value)
    return {**found, **stored_node_configs(resources)}


def stored_node_configs(resources: Sequence[DeclaredResource | NamedInputs]) -> dict[str, str]:
    """{resource name: cloud-config} of the S3 objects that hold a node config too large for its user-data field."""
    return {r.name: r.inputs["content"] for r in resources
            if str(r.inputs.get("key", "")).startswith(NODE_CONFIG_PREFIX) and isinstance(r.inputs.get("content"), str)}


def decode_user_data(value: str) -> str:
    """Plain text stays; base64 is decoded; gzip inside it is inflated."""
    if value.startswith(("#cloud-config", "Content-Type:", "#!")):
        return value
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value
    if raw.startswith(GZIP_MAGIC):
        raw = gzip.decompress(raw)
    return raw.decode()


def _user_data_values(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in USER_DATA_KEYS and isinstance(value, str):
                yield value
            elif key == "items" and isinstance(value, list):  # GCP metadata as [{key, value}]
                yield from (i["value"] for i in value if isinstance(i, dict) and i.get("key") == "user-data")
            else:
                yield from _user_data_values(value)
    elif isinstance(node, list):
        for item in node:
            yield from _user_data_values(item)
