"""Helpers the rules share: truthiness of bridged values, CIDR and port checks."""

from __future__ import annotations

import ipaddress
from typing import Any

OPEN_CIDRS = ("0.0.0.0/0", "::/0")
ADMIN_PORTS = (22, 3389)
# node_exporter, DCGM exporter, gpufleet's health exporter range, Prometheus, Grafana
EXPORTER_PORTS = (9100, 9400, 9090, 3000)


def truthy(value: Any) -> bool:
    """Bridged providers carry some booleans as strings ("true")."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def falsy(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.lower() == "false")


def as_list(value: Any) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def is_open(cidr: Any) -> bool:
    return isinstance(cidr, str) and cidr.strip() in OPEN_CIDRS + ("*", "Internet", "Any", "0.0.0.0")


def port_range_hits(low: Any, high: Any, ports: tuple[int, ...]) -> list[int]:
    """Ports from `ports` inside [low, high]; None/-1 bounds mean every port."""
    lo = _int(low, 0)
    hi = _int(high, 65535)
    if lo < 0 or hi < 0:
        lo, hi = 0, 65535
    return [p for p in ports if lo <= p <= hi]


def port_spec_hits(spec: Any, ports: tuple[int, ...]) -> list[int]:
    """Azure/GCP port specs: "22", "20-30", "*"; a missing spec means all ports."""
    if spec in (None, "", "*"):
        return list(ports)
    text = str(spec)
    low, _, high = text.partition("-")
    return port_range_hits(low, high or low, ports)


def overlaps(cidr: Any, other: str) -> bool:
    try:
        return ipaddress.ip_network(str(cidr), strict=False).overlaps(ipaddress.ip_network(other))
    except ValueError:
        return False


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
