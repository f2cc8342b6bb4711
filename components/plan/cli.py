"""`gpufleet`: the offline plan, plus the catalog, selection, review, `migrate`, `bench` and `inventory` commands.

    gpufleet plan STACK [--set PATH=VALUE ...] [--json] [--out DIR]
    gpufleet inventory STACK [--out DIR] [--outputs FILE]

Exit codes: 0 ok, 2 bad input (one message naming the field, no traceback), 1 an internal error (one line; rerun
with `--debug` for the traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from ..catalog.age import catalog_age_notes
from ..catalog.datadir import use_data_dir
from ..spec.errors import MISSING, Problem, SpecError
from ..spec.raw import raw_problems
from .project import RUNNING_COMMAND

BAD_INPUT = 2
INTERNAL_ERROR = 1
DEBUG_FLAG = "--debug"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = DEBUG_FLAG in argv
    argv = [arg for arg in argv if arg != DEBUG_FLAG]
    parser = argparse.ArgumentParser(prog="gpufleet", description="GPU clusters on AWS, Azure and GCP from one spec")
    parser.add_argument(DEBUG_FLAG, action="store_true", help="show the traceback of an internal error")
    commands = parser.add_subparsers(dest="command", required=True)
    plan = commands.add_parser("plan", help="show what a stack would create, offline (no credentials, no Pulumi CLI)")
    plan.add_argument("stack", help="stack name (stacks/Pulumi.<stack>.yaml) or a stack file's path")
    plan.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                      help="override a dotted path inside gpufleet:cluster, value read as YAML (repeatable)")
    plan.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    plan.add_argument("--out", type=Path, help="also write each node group's decoded user data into this folder")
    plan.add_argument("--data-dir", type=Path, help="catalog folder to read (default: the user data folder when a "
                      "refresh wrote one, else the shipped catalog)")
    plan.set_defaults(handler=run_plan)
    if argv[:1] != ["plan"]:
        _add_other_commands(commands)
    args = parser.parse_args(argv)
    running = RUNNING_COMMAND.set(f"gpufleet {args.command}")
    try:
        return args.handler(args)
    except BrokenPipeError:  # the reader went away (`gpufleet select --json | head`): stop quietly, no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except SpecError as err:  # bad input that a handler did not catch itself
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    except Exception as err:  # a bug in gpufleet, not in the input: one line, the traceback on request
        if debug:
            raise
        print(f"error: internal error ({type(err).__name__}: {_one_line(err)}); this is a gpufleet bug, not your "
              f"input; rerun with {DEBUG_FLAG} to see the traceback", file=sys.stderr)
        return INTERNAL_ERROR
    finally:
        RUNNING_COMMAND.reset(running)


def _add_other_commands(commands) -> None:
    """Every command but `plan`. A plan skips them (`gpufleet plan ...`: its parser and usage messages are the plan
    subparser's own): their modules (the catalog's renderer with rich, `bench`, `migrate`, the catalog refresh) cost
    a plan 10 to 15 ms of CPU to import and it uses none of them (benchmarks/plan_vs_floor.py)."""
    from ..bench.cli import add_commands as add_bench_commands
    from ..catalog.cli import add_commands as add_catalog_commands
    from ..inventory.cli import add_commands as add_inventory_commands
    from ..migrate.cli import add_commands as add_migrate_commands
    from .diff_cli import add_commands as add_review_commands

    add_catalog_commands(commands)
    add_review_commands(commands)
    add_migrate_commands(commands)
    add_bench_commands(commands)
    add_inventory_commands(commands)


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 200 else text[:197] + "..."


def run_plan(args: argparse.Namespace) -> int:
    # Imported here: `gpufleet select` and `catalog` must not pay for the Pulumi SDK, the mock runtime or the plan
    # renderer (select: 1 s per process, benchmarks/select_speed.py).
    import pulumi
    from rich.console import Console

    from .render import plan_json, print_plan
    from .runner import run_program
    from .stackfile import CLUSTER_KEY, apply_overrides, read_stack_config, stack_name
    from .userdata import node_user_data

    console = Console(soft_wrap=False, width=160)
    use_data_dir(args.data_dir)  # the program selects through load_catalog(), which reads this folder
    try:
        config = apply_overrides(read_stack_config(args.stack), args.overrides)
        _check_cluster_value(config.get(CLUSTER_KEY))
        result = run_program(stack_name(args.stack), config)
    except (SpecError, pulumi.RunError) as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(node_user_data(result.resources).items()):
            (args.out / f"{name}.user-data.yaml").write_text(text)
    outputs = result.outputs
    types = sorted({group["instance_type"] for group in (outputs.get("node_groups") or {}).values()}) or [
        outputs.get("instance_type") or ""]
    ages = [note for instance_type in types for note in catalog_age_notes(
        cloud=outputs.get("cloud"), location=(instance_type, outputs.get("region") or "", outputs.get("zone") or ""))]
    notes = list(dict.fromkeys(ages)) + user_data_notes(result) + deploy_time_notes(result)
    if args.json:
        print(plan_json(result))
        print("\n".join(notes), file=sys.stderr)  # the document's shape is fixed; the catalog's age goes beside it
    else:
        print_plan(result, console, notes=notes)
    return 0


PINNED = re.compile(r"([\w./:-]+)@(sha256:[0-9a-f]{64})")


def deploy_time_notes(result) -> list[str]:
    """What this offline plan shows in place of deploy-time lookups, and what `pulumi up` puts there instead."""
    from gpufleet.deploytime.containers import stand_in_digest
    from gpufleet.deploytime.lookups import RESOLVED_AT_DEPLOY

    from .userdata import node_user_data

    notes = []
    pinned = {match for text in node_user_data(result.resources).values() for match in PINNED.findall(_digest_lines(text))}
    stand_ins = sorted(reference for reference, digest in pinned if digest == stand_in_digest(reference))
    if stand_ins:
        notes.append(f"container images in the user data carry stand-in digests ({', '.join(stand_ins)}): "
                     "`pulumi up` reads each tag's digest from its registry, and the nodes run the images by digest")
    if any(RESOLVED_AT_DEPLOY in json.dumps(r.inputs) for r in result.resources if r.type.startswith("azure-native:")):
        notes.append(f"Azure marketplace image version `{RESOLVED_AT_DEPLOY}`: `pulumi up` pins the newest version "
                     "Azure lists for the image (`image.track: latest` leaves `latest`)")
    return notes


def _digest_lines(text: str) -> str:
    """The lines of `text` that can hold a PINNED match (none spans lines: its characters exclude the newline). The
    pattern's leading run backtracks at every position of a line, which over whole cloud-configs took about 5 ms."""
    return "\n".join(line for line in text.split("\n") if "@sha256:" in line)


def user_data_notes(result) -> list[str]:
    """How much of the cloud's user-data limit each machine's cloud-config takes: the room left for `node.nccl.env`,
    a drain command or optional parts (AWS holds 16 KB)."""
    from gpufleet.cloud_init import LIMITS, measured_size

    from .userdata import node_user_data, stored_node_configs

    cloud = result.outputs.get("cloud")
    if cloud not in LIMITS:
        return []
    limit, unit = LIMITS[cloud]
    stored = stored_node_configs(result.resources)
    notes = []
    for name, text in sorted(node_user_data(result.resources).items()):
        size = measured_size(text, cloud)
        notes.append(f"user data of {name}: {size:,} {unit}, too large for the launch template's {limit:,} with "
                     "room kept for a filesystem address: stored in S3 and fetched at boot by the template's boothook"
                     if name in stored else
                     f"user data of {name}: {size:,} of {limit:,} {unit} ({size * 100 // limit}%)")
    return notes


def _check_cluster_value(cluster: object) -> None:
    """The program gets the spec as JSON: refuse what JSON cannot carry (dates, sets, `.inf`) here, by field."""
    from .stackfile import CLUSTER_KEY

    if cluster is None:
        raise SpecError([Problem(CLUSTER_KEY, MISSING, "required: the stack file's `config:` needs a `gpufleet:cluster:` "
                                 "mapping, as stacks/Pulumi.aws-dev.yaml has")])
    if not isinstance(cluster, dict):
        raise SpecError([Problem(CLUSTER_KEY, cluster if isinstance(cluster, (str, int, float)) else "(a list)",
                                 "expected a mapping with at least `cloud`, `region`, `nodes` and `accelerator`")])
    problems = raw_problems(cluster)
    if problems:
        raise SpecError(problems)


if __name__ == "__main__":
    sys.exit(main())
