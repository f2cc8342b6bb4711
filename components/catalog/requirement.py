"""Turns `gpufleet select` / `gpufleet catalog` arguments, or a stack file, into a checked `Requirement`.

Every bad value is collected as a `Problem` naming the flag, the value and what is accepted, and raised
together as one `SpecError` (the CLI prints it and exits 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..plan.project import find_project
from ..spec.errors import Problem, SpecError
from ..spec.parse import parse_cluster_spec
from .loader import CLOUDS, Catalog
from .offers import DEFAULT_REFERENCE_GPU, Requirement

# `--fabric` uses the spec's words (`fabric: auto`); "any", the old CLI word, still means auto.
FABRIC_ALIASES = {"any": "auto"}


def requirement_from_args(args: argparse.Namespace, catalog: Catalog, select: bool) -> Requirement:
    root = "gpufleet select" if select else "gpufleet catalog"
    problems: list[Problem] = []
    shape = _stack_shape(args.stack, catalog, problems) if select and getattr(args, "stack", None) else {}
    gpus = tuple(_gpu(name, "--gpu", catalog, problems) for name in _split(args.gpu)) or shape.get("gpus", ())
    clouds = _split(args.cloud)
    problems += [Problem("--cloud", c, f"expected one of {', '.join(CLOUDS)}") for c in clouds if c not in CLOUDS]
    values: dict[str, Any] = {
        "gpus": tuple(g for g in gpus if g), "clouds": clouds, "regions": _split(args.region),
        "gpus_per_node": _first(args.gpus_per_node, shape.get("gpus_per_node")),
        "fabric": FABRIC_ALIASES.get(args.fabric, args.fabric) or shape.get("fabric") or "auto",
        "include_restricted": bool(getattr(args, "include_restricted", False)),
        "min_gpu_memory_gib": args.min_gpu_memory, "max_usd_per_hour": args.max_price,
    }
    fraction = _fraction(getattr(args, "gpu_fraction", None), problems)
    values["gpu_fraction"] = fraction if fraction is not None else shape.get("gpu_fraction")
    values["any_fraction"] = not select and values["gpu_fraction"] is None
    _positive(problems, "--gpus-per-node", values["gpus_per_node"])
    _positive(problems, "--min-gpu-memory", values["min_gpu_memory_gib"])
    _positive(problems, "--max-price", values["max_usd_per_hour"])
    if select:
        values.update(_select_values(args, shape, catalog, problems))
    else:
        values["market"] = args.market
    if problems:
        raise SpecError(problems, root=root)
    return Requirement(**values)


def _select_values(args, shape: dict, catalog: Catalog, problems: list[Problem]) -> dict:
    nodes = _first(args.nodes, shape.get("nodes"), 1)
    market = _first(args.market, shape.get("market"), "on-demand")
    base = _first(args.on_demand_base, shape.get("on_demand_base"), 0)
    _positive(problems, "--nodes", nodes)
    if base < 0 or (nodes and base > nodes):
        problems.append(Problem("--on-demand-base", base, f"expected 0 to {nodes} (the node count)"))
    if base and market != "mixed":
        problems.append(Problem("--on-demand-base", base, "only applies with `--market mixed`"))
    reference = _gpu(args.reference_gpu or DEFAULT_REFERENCE_GPU, "--reference-gpu", catalog, problems)
    if args.job_gpu_hours is not None and args.job_gpu_hours <= 0:
        problems.append(Problem("--job-gpu-hours", args.job_gpu_hours, "expected a positive number of GPU-hours"))
    factors = []
    for item in args.speed_factor:
        name, sep, text = item.partition("=")
        gpu = _gpu(name, "--speed-factor", catalog, problems) if sep else None
        try:
            factor = float(text)
        except ValueError:
            factor = 0.0
        if not sep or factor <= 0:
            problems.append(Problem("--speed-factor", item, "expected GPU=X with X > 0, e.g. `--speed-factor T4=0.21`"))
        elif gpu:
            factors.append((gpu, factor))
    values = {"nodes": nodes, "market": market, "on_demand_base": base,
              "reservation": shape.get("reservation", False), "job_gpu_hours": args.job_gpu_hours,
              "reference_gpu": reference or DEFAULT_REFERENCE_GPU, "speed_factors": tuple(sorted(factors))}
    values.update(_job_objective(args, problems))
    return values


def _job_objective(args, problems: list[Problem]) -> dict:
    """`--objective job --workload NAME [--job-samples N]`: the job's size and every GPU's speed from published
    MLPerf rows (components/bench/data/mlperf.yaml) instead of `--job-gpu-hours` and `--speed-factor`."""
    objective, name = getattr(args, "objective", "hour") or "hour", getattr(args, "workload", None)
    samples = getattr(args, "job_samples", None)
    if objective != "job":
        for flag, value in (("--workload", name), ("--job-samples", samples)):
            if value is not None:
                problems.append(Problem(flag, value, "only applies with `--objective job`"))
        return {}
    if not name:
        problems.append(Problem("--workload", None, "required with `--objective job`: an MLPerf workload name"))
        return {}
    for flag, given in (("--job-gpu-hours", args.job_gpu_hours is not None), ("--speed-factor", bool(args.speed_factor)),
                        ("--reference-gpu", args.reference_gpu is not None)):
        if given:
            problems.append(Problem(flag, "given", "not with `--objective job`: the workload's MLPerf rows set it"))
    if samples is not None and samples <= 0:
        problems.append(Problem("--job-samples", samples, "expected a positive number of samples"))
        return {}
    from ..bench.mlperf import DEFAULT_SAMPLES, job_size, workload
    try:
        work = workload(name)
    except SpecError as err:
        problems += err.problems
        return {}
    if work.training and samples is not None:
        problems.append(Problem("--job-samples", samples, f"not with the MLPerf Training workload {name}: its job is "
                                "one training run to the target quality"))
        return {}
    size = job_size(work, samples or DEFAULT_SAMPLES)
    return {"job_gpu_hours": size.gpu_hours, "reference_gpu": size.reference_gpu, "speed_factors": size.speed_factors,
            "workload": name, "measured_speed_only": True, "training_runs": work.training_runs()}


def _stack_shape(stack: str, catalog: Catalog, problems: list[Problem]) -> dict:
    """GPU, GPUs per node, nodes, market and fabric of a stack's `gpufleet:cluster` (clouds are not limited)."""
    if stack.endswith((".yaml", ".yml")):
        path, stacks_dir = Path(stack), None
    else:
        try:
            stacks_dir = find_project().stacks_dir  # the current Pulumi project's, as `gpufleet plan` reads them
        except SpecError as err:
            problems.extend(err.problems)
            return {}
        path = stacks_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        names = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in stacks_dir.glob("Pulumi.*.yaml")) if stacks_dir else []
        problems.append(Problem("--stack", stack, f"expected a stack name ({', '.join(names) or 'none'}) or a "
                                "stack file path"))
        return {}
    from ..plan.stackfile import read_stack_config  # the one stack-file reader: duplicate keys, line and column
    try:
        cluster = read_stack_config(str(path)).get("gpufleet:cluster")
    except SpecError as err:
        problems += err.problems
        return {}
    try:
        spec = parse_cluster_spec(cluster or {})
    except SpecError as err:
        problems += [Problem(f"{path.name}: {p.path}", p.value, p.expected) for p in err.problems]
        return {}
    acc = spec.accelerator
    instance = catalog.instance(spec.cloud, acc.instance_type) if acc.instance_type else None
    gpu = catalog.gpu(acc.gpu) if acc.gpu else (catalog.gpu(instance.gpu) if instance else None)
    if gpu is None:
        problems.append(Problem("--stack", stack, "its accelerator names no GPU or instance type the catalog knows"))
        return {}
    return {"gpus": (gpu.model,), "gpus_per_node": acc.gpus_per_node or (instance.gpus if instance else None),
            "nodes": spec.nodes, "market": spec.market.type,
            "on_demand_base": spec.market.on_demand_base if spec.market.type == "mixed" else 0,
            "reservation": spec.market.capacity_reservation_id is not None, "fabric": spec.fabric,
            "gpu_fraction": acc.gpu_fraction if acc.gpu_fraction is not None else (
                instance.gpu_fraction if instance and instance.is_vgpu_slice else None)}


def _gpu(name: str, flag: str, catalog: Catalog, problems: list[Problem]) -> str | None:
    gpu = catalog.gpu(name)
    if gpu is not None:
        return gpu.model
    hint = catalog.gpu_suggestions(name)
    known = ", ".join(sorted(catalog.gpus))
    problems.append(Problem(flag, name, (f"did you mean {', '.join(repr(h) for h in hint)}? " if hint else "")
                            + f"expected a GPU in the catalog: {known}"))
    return None


def _fraction(text: str | None, problems: list[Problem]) -> float | None:
    """`--gpu-fraction 0.25` or `1/4`: a share of one GPU above 0 and below 1."""
    if text is None:
        return None
    top, slash, bottom = str(text).partition("/")
    try:
        value = float(top) / float(bottom) if slash else float(top)
    except (ValueError, ZeroDivisionError):
        value = 0.0
    if not 0 < value < 1:
        problems.append(Problem("--gpu-fraction", text, "expected a share of one GPU above 0 and below 1, e.g. 0.25 "
                                "or 1/4"))
        return None
    return value


def _positive(problems: list[Problem], flag: str, value) -> None:
    if value is not None and value <= 0:
        problems.append(Problem(flag, value, "expected a number above 0"))


def _first(*values):
    return next((v for v in values if v is not None), None)


def _split(values: list[str] | None) -> tuple[str, ...]:
    return tuple(v.strip() for item in values or () for v in item.split(",") if v.strip())
