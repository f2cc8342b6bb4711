"""Finds each node group's user data in the declared inputs and decodes it (base64, gzip) for `--out`."""

from __future__ import annotations

import base64
import binascii
import gzip
from collections.abc import Iterator
from typing import Any

from .mocks import DeclaredResource

USER_DATA_KEYS = ("userData", "customData", "user-data")
GZIP_MAGIC = b"\x1f\x8b"


def node_user_data(resources: list[DeclaredResource]) -> dict[str, str]:
    """{resource name: decoded cloud-config} for every resource that carries user data."""
    found = {}
    for resource in resources:
        for value in _user_data_values(resource.inputs):
            found[resource.name] = decode_user_data(value)
    return found


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
