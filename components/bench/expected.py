"""The figures a healthy node must reach (`data/expected.yaml`), typed, with the tolerance rules applied.

Each figure is `minimum` (a published acceptance threshold: the floor as it stands) or `measured` (a published run
on healthy hardware: the floor is a documented fraction of it). A figure the data leaves empty stays None, and every
caller says "not compared" rather than guess.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from pathlib import Path

import yaml

DATA_FILE = Path(__file__).parent / "data" / "expected.yaml"
# The fraction of a figure a measurement must reach, per kind of figure, unless the spec's
# `node.health.performance.tolerance` replaces it: a published threshold is the floor itself; a published healthy run
# moves by several percent between runs and software versions, a degraded link or throttled GPU by tens of percent.
DEFAULT_TOLERANCE = {"minimum": 1.0, "measured": 0.8}
GPU_METRICS = ("h2d_gbps", "d2h_gbps", "matmul_tflops")
INSTANCE_METRICS = ("allreduce_intranode", "allreduce_two_node")
# A cluster whose nodes do not run the type's own fabric (`fabric: tcp` anywhere; GCP A3 High / A3 Mega, where
# GPUDirect-TCPX(O) is not set up and NCCL runs over TCP on every gVNIC NIC) is compared with the type's
# `allreduce_two_node.<node fabric>` figure, never with the native fabric's.
FALLBACK_TWO_NODE = "allreduce_two_node."
UNITS = {"h2d_gbps": "GB/s", "d2h_gbps": "GB/s", "matmul_tflops": "TFLOP/s", "allreduce_intranode": "GB/s",
         "allreduce_two_node": "GB/s"}


@dataclass(frozen=True)
class Figure:
    """One expected figure. `value` None means no trustworthy public figure (`why` says so)."""

    metric: str
    value: float | None
    kind: str = ""
    source: str = ""
    date: date | None = None
    bytes: int | None = None  # all-reduce: the message size the figure was measured at
    why: str = ""
    collective: str = "all_reduce"
    """The nccl-tests collective the figure was measured with (`<collective>_perf`): a two-node figure is compared only
    with a run of the same collective, and Google publishes its GPUDirect-TCPX(O) runs as all_gather."""

    def floor(self, tolerance: float | None = None) -> float | None:
        """The lowest healthy measurement: value x (the spec's tolerance, else the kind's default)."""
        if self.value is None:
            return None
        return self.value * (tolerance if tolerance is not None else DEFAULT_TOLERANCE[self.kind])

    def tolerance(self, override: float | None = None) -> float:
        return override if override is not None else DEFAULT_TOLERANCE.get(self.kind, 1.0)


@dataclass(frozen=True)
class NodeFigures:
    """Everything one node type is compared with."""

    gpu: str
    instance: str
    h2d_gbps: Figure
    d2h_gbps: Figure
    matmul_tflops: Figure
    allreduce_intranode: Figure
    allreduce_two_node: Figure

    def all(self) -> tuple[Figure, ...]:
        return (self.h2d_gbps, self.d2h_gbps, self.matmul_tflops, self.allreduce_intranode, self.allreduce_two_node)


@dataclass(frozen=True)
class Expected:
    gpus: dict[str, dict[str, Figure]]
    instances: dict[str, dict[str, Figure]]


def _figure(metric: str, row: dict) -> Figure:
    source = row.get("source") or ""
    if isinstance(source, list):
        source = "; ".join(str(s) for s in source)
    when = row.get("date")
    if isinstance(when, str):
        when = date.fromisoformat(when)
    return Figure(metric=metric, value=None if row.get("value") is None else float(row["value"]),
                  kind=row.get("kind", ""), source=source, date=when, bytes=row.get("bytes"), why=row.get("why", ""),
                  collective=row.get("collective", "all_reduce"))


@lru_cache(maxsize=4)
def load_expected(path: Path = DATA_FILE) -> Expected:
    doc = yaml.safe_load(path.read_text())
    gpus = {model: {m: _figure(m, row) for m, row in rows.items()} for model, rows in doc["gpus"].items()}
    instances = {key: {m: _figure(m.split(".")[0], row) for m, row in rows.items()}
                 for key, rows in doc["instances"].items()}
    return Expected(gpus=gpus, instances=instances)


def figures_for(cloud: str, instance: str, gpu: str, expected: Expected | None = None,
                fallback_fabric: str | None = None) -> NodeFigures:
    """The figures for one node type; empty ones carry why they are empty. `fallback_fabric` is what the nodes run
    instead of the type's own fabric (None: its own), which picks the two-node figure."""
    expected = expected or load_expected()
    per_gpu = expected.gpus.get(gpu, {})
    per_instance = expected.instances.get(f"{cloud}/{instance}", {})
    missing_gpu = f"no figures recorded for GPU {gpu}"

    def pick(table: dict[str, Figure], metric: str, why: str) -> Figure:
        return table.get(metric) or Figure(metric=metric, value=None, why=why)

    return NodeFigures(
        gpu=gpu, instance=instance,
        h2d_gbps=pick(per_gpu, "h2d_gbps", missing_gpu),
        d2h_gbps=pick(per_gpu, "d2h_gbps", missing_gpu),
        matmul_tflops=pick(per_gpu, "matmul_tflops", missing_gpu),
        allreduce_intranode=pick(per_instance, "allreduce_intranode",
                                 f"no published intra-node all-reduce figure for {cloud}/{instance}"),
        allreduce_two_node=two_node(per_instance, f"{cloud}/{instance}", fallback_fabric),
    )


def two_node(per_instance: dict[str, Figure], key: str, fallback_fabric: str | None) -> Figure:
    """The two-node figure over the type's own fabric, or over `fallback_fabric` (as the metric
    `allreduce_two_node`, so reports and metrics keep one name)."""
    if fallback_fabric is None:
        return per_instance.get("allreduce_two_node") or Figure(
            metric="allreduce_two_node", value=None, why=f"no published two-node all-reduce figure for {key}")
    figure = per_instance.get(FALLBACK_TWO_NODE + fallback_fabric)
    if figure is None:
        return Figure(metric="allreduce_two_node", value=None,
                      why=f"no published two-node all-reduce figure for {key} over {fallback_fabric}")
    return replace(figure, metric="allreduce_two_node")


# The metrics the node measures itself (the two-node figure is `gpufleet bench`'s), in the order node.env lists them.
NODE_METRICS = ("h2d_gbps", "d2h_gbps", "matmul_tflops", "allreduce_intranode")


def node_expectation(cloud: str, instance: str, gpu: str, tolerance: float | None) -> str:
    """GPUFLEET_PERF_EXPECT for a node: "metric=value:tolerance[:bytes]" per metric that has a figure, in a fixed
    order (the same spec always renders the same user data); metrics without one are left out (not compared)."""
    figures = figures_for(cloud, instance, gpu)
    items = []
    for metric in NODE_METRICS:
        figure: Figure = getattr(figures, metric)
        if figure.value is None:
            continue
        item = f"{metric}={figure.value:g}:{figure.tolerance(tolerance):g}"
        items.append(item + (f":{figure.bytes}" if figure.bytes else ""))
    return " ".join(items)
