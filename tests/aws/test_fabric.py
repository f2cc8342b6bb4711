"""EFA interface layout per family, from catalog rows (AWS efa-acc-inst-types guidance)."""

import pytest

from gpufleet.aws.fabric import interface_layout
from gpufleet.catalog import load_catalog


def layout(instance_type: str, efa: bool = True):
    return interface_layout(load_catalog().instance("aws", instance_type), efa=efa)


@pytest.mark.parametrize("instance_type, efa_count", [
    ("p4d.24xlarge", 4), ("p4de.24xlarge", 4), ("p5.48xlarge", 32), ("p5e.48xlarge", 32), ("p5en.48xlarge", 16),
    ("p6-b200.48xlarge", 8),
])
def test_one_efa_interface_per_network_card(instance_type, efa_count):
    slots = layout(instance_type)
    efa = [s for s in slots if s.interface_type == "efa-only"]
    assert len(efa) == efa_count
    assert sorted({s.network_card_index for s in efa}) == list(range(efa_count))


@pytest.mark.parametrize("instance_type", ["p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"])
def test_primary_is_ena_at_card_0_device_0_and_card_0_efa_at_device_1(instance_type):
    slots = layout(instance_type)
    assert (slots[0].network_card_index, slots[0].device_index, slots[0].interface_type) == (0, 0, "interface")
    assert (slots[1].network_card_index, slots[1].device_index, slots[1].interface_type) == (0, 1, "efa-only")
    assert all(s.device_index == 0 for s in slots[2:])


def test_no_slot_is_used_twice():
    slots = layout("p5.48xlarge")
    assert len({(s.network_card_index, s.device_index) for s in slots}) == len(slots) == 33


def test_without_efa_only_the_primary_interface():
    assert [s.interface_type for s in layout("p5.48xlarge", efa=False)] == ["interface"]
    assert [s.interface_type for s in layout("g6e.xlarge", efa=False)] == ["interface"]


def test_catalog_row_with_more_cards_than_efa_interfaces_is_caught():
    from dataclasses import replace
    row = replace(load_catalog().instance("aws", "p5.48xlarge"), efa_interfaces=8)
    with pytest.raises(ValueError, match="lays out 32 EFA interfaces but allows 8"):
        interface_layout(row, efa=True)
