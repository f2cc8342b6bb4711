"""`gpufleet`: the offline plan, plus the catalog and selection commands.

    gpufleet plan STACK [--set PATH=VALUE ...] [--json] [--out DIR]

Exit codes: 0 ok, 2 bad input (one message naming the field, no traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from rich.console import Console

from ..catalog.age import catalog_age_notes
from ..catalog.cli import add_commands as add_catalog_commands
from ..catalog.datadir import use_data_dir
from ..spec.errors import SpecError
from .diff_cli import add_commands as add_review_commands

BAD_INPUT = 2


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="gpufleet", description="GPU clusters on AWS, Azure and GCP from one spec")
    commands = parser.add_subparsers(dest="command", required=True)
    plan = commands.add_parser("plan", help="show what a stack would create, offline (no credentials, no Pulumi CLI)")
    plan.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    plan.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                      help="override a dotted path inside gpufleet:cluster, value read as YAML (repeatable)")
    plan.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    plan.add_argument("--out", type=Path, help="also write each node group's decoded user data into this folder")
    plan.add_argument("--data-dir", type=Path, help="catalog folder to read (default: the user data folder when a "
                      "refresh wrote one, else the shipped catalog)")
    plan.set_defaults(handler=run_plan)
    add_catalog_commands(commands)
    add_review_commands(commands)
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except BrokenPipeError:  # the reader went away (`gpufleet select --json | head`): stop quietly, no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def run_plan(args: argparse.Namespace) -> int:
    # Imported here: `gpufleet select` and `catalog` must not pay for the Pulumi SDK (select: 1 s per process).
    import pulumi

    from .render import plan_json, print_plan
    from .runner import run_program
    from .stackfile import apply_overrides, read_stack_config
    from .userdata import node_user_data

    console = Console(soft_wrap=False, width=160)
    use_data_dir(args.data_dir)  # the program selects through load_catalog(), which reads this folder
    try:
        config = apply_overrides(read_stack_config(args.stack), args.overrides)
        result = run_program(args.stack, config)
    except (SpecError, pulumi.RunError) as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(node_user_data(result.resources).items()):
            (args.out / f"{name}.user-data.yaml").write_text(text)
    notes = catalog_age_notes(cloud=result.outputs.get("cloud"))
    if args.json:
        print(plan_json(result))
        print("\n".join(notes), file=sys.stderr)  # the document's shape is fixed; the catalog's age goes beside it
    else:
        print_plan(result, console, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
