"""EFA network interfaces for a launch template, derived from the instance's catalog row (never its name).

Layout follows AWS's current guidance (EC2 User Guide, "Maximize network bandwidth on accelerated instances"):
- card 0 / device 0 is the primary ENA interface (`interface`), which carries the node's one private IP;
  an EFA-only interface cannot be primary;
- if card 0 supports EFA, card 0 / device 1 is `efa-only`;
- every other network card gets one `efa-only` interface at device 0.
EFA-only interfaces take no IP address, so a p5 node uses 1 private IP instead of 32.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.models import InstanceType

PRIMARY = "interface"
EFA_ONLY = "efa-only"


@dataclass(frozen=True)
class InterfaceSlot:
    """One network interface of the launch template."""

    network_card_index: int
    device_index: int
    interface_type: str


def interface_layout(instance: InstanceType, efa: bool) -> list[InterfaceSlot]:
    """The primary ENA interface, plus one EFA-only interface per EFA-capable card when `efa` is on."""
    slots = [InterfaceSlot(0, 0, PRIMARY)]
    if not efa:
        return slots
    if instance.primary_card_efa:
        slots.append(InterfaceSlot(0, 1, EFA_ONLY))
    slots += [InterfaceSlot(card, 0, EFA_ONLY) for card in range(1, instance.network_cards)]
    efa_count = len(slots) - 1
    if efa_count > instance.efa_interfaces:
        raise ValueError(f"catalog row {instance.name} lays out {efa_count} EFA interfaces but allows "
                         f"{instance.efa_interfaces}; fix components/catalog/data/aws/instances.yaml")
    return slots
