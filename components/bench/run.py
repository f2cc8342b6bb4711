"""`gpufleet bench`: the multi-node all-reduce across a cluster's nodes against the type's two-node figure.

busbw is comparable across node counts (nccl-tests' PERFORMANCE.md), so the whole cluster's run is compared with the
published two-node figure. When it falls short and there are more than two nodes, the nodes are benchmarked in
pairs, twice with the pairing shifted by one, so that a slow node shows in two slow pairs and is named.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .expected import Figure
from .launcher import Launcher, Runner
from .nccl import busbw_at

DEFAULT_SIZE = 1 << 30


@dataclass(frozen=True)
class Measurement:
    hosts: tuple[str, ...]
    busbw: float | None
    ok: bool | None  # None: not compared (no figure) or not measured
    detail: str


@dataclass
class BenchReport:
    figure: Figure
    tolerance: float | None
    size: int
    all_nodes: Measurement | None = None
    pairs: list[Measurement] = field(default_factory=list)

    @property
    def suspects(self) -> list[str]:
        """Nodes in at least two slow pairs, or in every slow pair when only one was run against them."""
        slow = [m.hosts for m in self.pairs if m.ok is False]
        counts: dict[str, int] = {}
        for pair in slow:
            for host in pair:
                counts[host] = counts.get(host, 0) + 1
        twice = sorted(h for h, n in counts.items() if n >= 2)
        return twice or sorted(counts) if slow else []

    @property
    def ok(self) -> bool:
        return not (self.all_nodes and self.all_nodes.ok is False) and all(m.ok is not False for m in self.pairs)


def measure(hosts: tuple[str, ...], gpus_per_node: int, size: int, figure: Figure, tolerance: float | None,
            launcher: Launcher, runner: Runner) -> Measurement:
    code, output = runner(launcher.command(hosts, gpus_per_node, size))
    row = busbw_at(output, size)
    if code != 0 or row is None:
        tail = " ".join(output.strip().splitlines()[-2:])[:200]
        return Measurement(hosts, None, False, f"{launcher.name} exit {code}, no result row for {size} bytes: {tail}")
    if row.wrong:
        return Measurement(hosts, row.busbw, False, f"{row.wrong} wrong result(s) at {size} bytes")
    floor = figure.floor(tolerance)
    if floor is None:
        return Measurement(hosts, row.busbw, None, f"{row.busbw:.1f} GB/s; not compared: {figure.why}")
    ok = row.busbw >= floor
    return Measurement(hosts, row.busbw, ok, f"{row.busbw:.1f} GB/s {'>=' if ok else 'below'} {floor:.1f} GB/s "
                                             f"(figure {figure.value:g} x tolerance {figure.tolerance(tolerance):g})")


def pairings(hosts: tuple[str, ...]) -> list[tuple[str, str]]:
    """Adjacent pairs, then the same shifted by one, so each node is paired with two different neighbours."""
    n = len(hosts)
    first = [(hosts[i], hosts[i + 1]) for i in range(0, n - 1, 2)]
    shifted = [(hosts[i], hosts[(i + 1) % n]) for i in range(1, n, 2)]
    seen, pairs = set(), []
    for pair in first + shifted:
        if frozenset(pair) not in seen and pair[0] != pair[1]:
            seen.add(frozenset(pair))
            pairs.append(pair)
    return pairs


def bench(hosts: tuple[str, ...], gpus_per_node: int, figure: Figure, tolerance: float | None, launcher: Launcher,
          runner: Runner, pairs: str = "auto") -> BenchReport:
    """pairs: "auto" (only when the whole run is slow), "always" or "never"."""
    size = figure.bytes or DEFAULT_SIZE
    report = BenchReport(figure=figure, tolerance=tolerance, size=size)
    report.all_nodes = measure(hosts, gpus_per_node, size, figure, tolerance, launcher, runner)
    wanted = pairs == "always" or (pairs == "auto" and report.all_nodes.ok is False)
    if wanted and len(hosts) > 2:
        report.pairs = [measure(pair, gpus_per_node, size, figure, tolerance, launcher, runner)
                        for pair in pairings(hosts)]
    return report
