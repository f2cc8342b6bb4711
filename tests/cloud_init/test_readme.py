"""cloud_init/README.md documents every node option, every unit and every fabric (a drift check)."""

from __future__ import annotations

from gpufleet.spec.node import NodeSoftware

from .conftest import FILES, REPO

README = (REPO / "cloud_init" / "README.md").read_text()


def option_paths(model, prefix="node."):
    for name, field in model.model_fields.items():
        if hasattr(field.annotation, "model_fields"):
            yield from option_paths(field.annotation, f"{prefix}{name}.")
        else:
            yield prefix + name


def test_every_node_option_is_documented():
    assert [p for p in option_paths(NodeSoftware) if f"`{p}`" not in README] == []


def test_every_unit_and_fabric_is_documented():
    units = [p.name for folder in (FILES, REPO / "cloud_init" / "gpudirect")
             for p in (folder / "etc/systemd/system").iterdir() if p.is_file()]
    fabrics = [p.stem for p in (REPO / "cloud_init" / "nccl").iterdir()]
    assert [u for u in units if u not in README] == []
    assert [f for f in fabrics if f"`{f}`" not in README] == []
