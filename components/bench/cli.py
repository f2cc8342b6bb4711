"""`gpufleet bench STACK`: runs the multi-node NCCL all-reduce across a cluster's nodes and prints what it achieved
against what the type should deliver, per node pair where the cluster is slow.

    gpufleet bench STACK --hosts 10.0.1.5,10.0.1.6 [--hostfile FILE] [--launcher mpirun|slurm]
                   [--tolerance 0.8] [--pairs auto|always|never] [--set PATH=VALUE] [--dry-run] [--json]

Run it where the launcher reaches every node (a node of the cluster, a login host, or through the private access
that `gpufleet migrate` sets up). Exit codes: 0 at or above the floor (or not compared), 1 below it, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from ..spec.errors import Problem, SpecError
from .expected import figures_for
from .launcher import LAUNCHERS, Runner, local_runner, make_launcher
from .run import BenchReport, Measurement, bench, pairings

OK, SLOW, BAD_INPUT = 0, 1, 2
ROOT = "gpufleet bench"


def add_commands(subparsers) -> None:
    parser = subparsers.add_parser("bench", help="run the multi-node all-reduce across a cluster's nodes and compare "
                                   "it with what the type should deliver")
    parser.add_argument("stack", help="stack name (stacks/Pulumi.<stack>.yaml) or a stack file's path")
    parser.add_argument("--hosts", action="append", default=[], help="the nodes' addresses or names (a,b or repeated)")
    parser.add_argument("--hostfile", type=Path, help="a file with one node per line (an MPI hostfile's first word)")
    parser.add_argument("--launcher", choices=sorted(LAUNCHERS), help="mpirun over SSH (default) or Slurm's srun")
    parser.add_argument("--tolerance", type=float, help="fraction of the figure to reach (default: the stack's "
                        "node.health.performance.tolerance, else the figure's own default)")
    parser.add_argument("--pairs", choices=("auto", "always", "never"), default="auto",
                        help="benchmark node pairs to find a slow node: when the whole run is slow (auto), always, "
                        "or never")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                        help="override a dotted path inside gpufleet:cluster (repeatable)")
    parser.add_argument("--group", help="with node groups: the group whose nodes --hosts names (default: the default "
                        "partition's group)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands instead of running them")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.set_defaults(handler=run_bench)


def read_hosts(args: argparse.Namespace) -> tuple[str, ...]:
    hosts = [h.strip() for item in args.hosts for h in item.split(",") if h.strip()]
    if args.hostfile:
        try:
            lines = args.hostfile.read_text().splitlines()
        except OSError as err:
            raise SpecError([Problem("--hostfile", str(args.hostfile), f"cannot be read: {err.strerror}")],
                            root=ROOT) from None
        hosts += [line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if len(hosts) < 2:
        raise SpecError([Problem("--hosts", ",".join(hosts) or "nothing", "expected at least two nodes (by --hosts "
                                 "or --hostfile): the benchmark runs between nodes")], root=ROOT)
    if len(set(hosts)) != len(hosts):
        raise SpecError([Problem("--hosts", ",".join(hosts), "expected each node once")], root=ROOT)
    return tuple(hosts)


def group_spec(spec, group: str | None):
    """The spec of the node group the hosts are in: the stack's own without node groups, else `--group`'s (default:
    the default partition's); `SpecError` naming the groups for an unknown one."""
    from ..groups.resolve import group_specs

    groups = group_specs(spec)
    if group is None:
        return next(g for g in groups if g.slurm_default).spec
    found = next((g for g in groups if g.name == group), None)
    if found is None:
        names = ", ".join(repr(g.name) for g in groups if g.name) or "none (the stack has no node_groups)"
        raise SpecError([Problem("--group", group, f"expected one of the stack's node groups: {names}")], root=ROOT)
    return found.spec


def run_bench(args: argparse.Namespace, runner: Runner | None = None) -> int:
    from ..boot import node_fabric
    from ..catalog.selector import select
    from ..plan.stackfile import CLUSTER_KEY, apply_overrides, read_stack_config
    from ..spec import parse_cluster_spec

    try:
        if args.tolerance is not None and not 0 < args.tolerance <= 1:
            raise SpecError([Problem("--tolerance", args.tolerance, "expected a fraction above 0, at most 1")],
                            root=ROOT)
        hosts = read_hosts(args)
        cluster = parse_cluster_spec(apply_overrides(read_stack_config(args.stack), args.overrides).get(CLUSTER_KEY))
        spec = group_spec(cluster, getattr(args, "group", None))
        selection = select(spec)
    except SpecError as err:
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    instance = selection.instance
    fabric = node_fabric(selection) or "tcp"
    fallback = None if fabric == instance.fabric else fabric
    figure = figures_for(instance.cloud, instance.name, selection.gpu.model,
                         fallback_fabric=fallback).allreduce_two_node
    tolerance = args.tolerance if args.tolerance is not None else spec.node.health.performance.tolerance
    partition = spec.scheduler.slurm.partition if cluster.node_groups else None
    launcher = make_launcher(args.launcher or default_launcher(spec), dict(os.environ), f"{figure.collective}_perf",
                             partition)
    if args.dry_run:
        size = figure.bytes or (1 << 30)
        groups = [hosts] + ([p for p in pairings(hosts)] if len(hosts) > 2 and args.pairs != "never" else [])
        for group in groups:
            print(shlex.join(launcher.command(tuple(group), instance.gpus, size)))
        return OK
    report = bench(hosts, instance.gpus, figure, tolerance, launcher, runner or local_runner(), args.pairs)
    if args.json:
        print(json.dumps(report_document(report, f"{instance.cloud}/{instance.name}"), indent=2, sort_keys=True))
    else:
        print_report(report, f"{instance.cloud}/{instance.name}", len(hosts))
    return OK if report.ok else SLOW


def default_launcher(spec) -> str:
    """Slurm's srun when the cluster runs Slurm (`scheduler.kind: slurm`), else mpirun over SSH."""
    return "slurm" if spec.scheduler.kind == "slurm" else "mpirun"


def _measurement(m: Measurement) -> dict:
    return {"hosts": list(m.hosts), "busbw_gbps": m.busbw, "ok": m.ok, "detail": m.detail}


def report_document(report: BenchReport, instance: str) -> dict:
    figure = report.figure
    return {"instance_type": instance, "message_bytes": report.size,
            "expected": {"collective": figure.collective, "busbw_gbps": figure.value, "floor_gbps": figure.floor(report.tolerance),
                         "source": figure.source, "date": figure.date.isoformat() if figure.date else None,
                         "why_empty": figure.why or None},
            "all_nodes": _measurement(report.all_nodes) if report.all_nodes else None,
            "pairs": [_measurement(m) for m in report.pairs], "slow_nodes": report.suspects, "ok": report.ok}


def print_report(report: BenchReport, instance: str, nodes: int) -> None:
    figure = report.figure
    if figure.value is None:
        print(f"{instance}: expected two-node all-reduce busbw: none published ({figure.why}); measured only")
    else:
        print(f"{instance}: expected {figure.collective.replace('_', '-')} busbw {figure.value:g} GB/s at {report.size} bytes, floor "
              f"{figure.floor(report.tolerance):.1f} GB/s (source: {figure.source}; {figure.date})")
    if report.all_nodes:
        print(f"  all {nodes} nodes: {_verdict(report.all_nodes)}")
    for m in report.pairs:
        print(f"  {' + '.join(m.hosts)}: {_verdict(m)}")
    if report.suspects:
        print(f"  slow: {', '.join(report.suspects)} (in the slow pairs above); replace or drain them")


def _verdict(m: Measurement) -> str:
    return {True: "ok   ", False: "SLOW ", None: "     "}[m.ok] + m.detail
