"""Writes a stack's inventory folder: the plugin file, an `ansible.cfg` that points at it, and the collection's
place on Ansible's collection path, so `ansible-playbook gpufleet.day2.<playbook>` runs from that folder with no
download (`ansible-galaxy` is never called)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .build import PLUGIN_SUFFIX
from .collection import NAME, NAMESPACE, collection_path
from .facts import ClusterFacts

CONFIG_HEADER = "# Written by `gpufleet inventory`; rewritten on every run (delete this line to keep your own).\n"


def inventory_file_name(facts: ClusterFacts) -> str:
    """`<stack>.<plugin>.yml`: each plugin reads only files whose names end in its own suffix."""
    return f"{facts.stack}.{PLUGIN_SUFFIX[facts.cloud]}.yml"


def render(document: dict[str, Any], facts: ClusterFacts) -> str:
    header = (f"# Ansible inventory of gpufleet stack {facts.stack!r} ({facts.cloud}, {facts.region}); written by "
              "`gpufleet inventory`.\n# Lists the stack's live nodes by the tags/labels gpufleet sets; check with "
              "`ansible-inventory -i THIS_FILE --graph`.\n")
    return header + yaml.safe_dump(document, sort_keys=False, width=1000)


def ansible_config(inventory_name: str) -> str:
    return (CONFIG_HEADER + "[defaults]\n"
            f"inventory = {inventory_name}\n"
            "collections_path = collections\n"
            "# Nodes are reached through SSM, IAP or a proxy; Python is found on the node, not guessed.\n"
            "interpreter_python = auto_silent\n")


def write_inventory(facts: ClusterFacts, document: dict[str, Any], out_dir: Path) -> list[Path]:
    """The files written, inventory first. Files of other stacks in `out_dir` are left alone."""
    out_dir.mkdir(parents=True, exist_ok=True)
    inventory = out_dir / inventory_file_name(facts)
    inventory.write_text(render(document, facts))
    written = [inventory]
    config = out_dir / "ansible.cfg"
    if not config.exists() or config.read_text().startswith(CONFIG_HEADER):
        config.write_text(ansible_config(inventory.name))
        written.append(config)
    link = out_dir / "collections" / "ansible_collections" / NAMESPACE / NAME
    link.parent.mkdir(parents=True, exist_ok=True)
    target = collection_path()
    if link.is_symlink() and link.resolve() != target:
        link.unlink()
    if not link.exists():
        link.symlink_to(target, target_is_directory=True)
        written.append(link)
    return written
