"""`gpufleet inventory STACK [--out DIR] [--outputs FILE]`: the stack's Ansible inventory, offline.

Exit codes as `gpufleet plan`: 0 written, 2 bad input (one message naming what is missing or wrong).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..spec.errors import Problem, SpecError
from .errors import ROOT

BAD_INPUT = 2


def add_commands(commands) -> None:
    inventory = commands.add_parser("inventory", help="write the stack's Ansible inventory (its live nodes by tag, "
                                    "reached through SSM, IAP or Bastion) for the gpufleet.day2 playbooks")
    inventory.add_argument("stack", help="stack name (stacks/Pulumi.<stack>.yaml) or a stack file's path")
    inventory.add_argument("--out", type=Path, default=Path("inventory"), help="folder to write (default: inventory)")
    inventory.add_argument("--outputs", type=Path, metavar="FILE",
                           help="the deployed stack's `pulumi stack output --json`: names the cloud chose at deploy "
                           "time (AWS SSM bucket, Azure resource group and scale sets)")
    inventory.add_argument("--jump-host", metavar="USER@HOST", help="Azure: reach the nodes through this SSH host")
    inventory.add_argument("--bastion", metavar="NAME", help="Azure: reach the nodes through this Azure Bastion")
    inventory.add_argument("--bastion-resource-group", metavar="RG", help="Azure: the Bastion's resource group")
    inventory.set_defaults(handler=run_inventory)


def read_outputs(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        outputs = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise SpecError([Problem("--outputs", str(path), f"expected the JSON `pulumi stack output --json` prints "
                                 f"({err})")], root=ROOT) from None
    if not isinstance(outputs, dict):
        raise SpecError([Problem("--outputs", str(path), "expected a JSON object of output names and values")],
                        root=ROOT)
    return outputs


def run_inventory(args: argparse.Namespace) -> int:
    # Imported here: the builders load the cloud packages, which `gpufleet select` must not pay for.
    from ..plan.project import find_project
    from ..plan.stackfile import read_stack_config, stack_name
    from .build import AzureAccess, inventory_document
    from .collection import collection_path
    from .facts import cluster_facts
    from .files import write_inventory

    try:
        project = find_project()
        facts = cluster_facts(project.name, stack_name(args.stack), read_stack_config(args.stack),
                              read_outputs(args.outputs))
        access = AzureAccess(jump_host=args.jump_host, bastion=args.bastion,
                             bastion_resource_group=args.bastion_resource_group,
                             proxy_script=str(collection_path() / "files" / "bastion-proxy"))
        written = write_inventory(facts, inventory_document(facts, access), args.out)
    except SpecError as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    for path in written:
        print(path)
    print(f"run from {args.out}: ansible-inventory --graph; ansible-playbook gpufleet.day2.health", file=sys.stderr)
    return 0
