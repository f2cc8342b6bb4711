"""One ingress firewall rule, as the cluster's rule builders (security, serving) describe it before declaring it.

Its own module so that the serving rules and the cluster's base rules can both build them without importing each
other: `security` collects serving's rules, and serving needs only this type.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FirewallRule:
    """One ingress rule on one of the cluster's VPCs."""

    role: str
    vpc_role: str
    allows: tuple[tuple[str, tuple[str, ...]], ...]  # (protocol, ports)
    sources: tuple[str, ...]
    description: str
