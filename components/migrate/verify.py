"""`gpufleet migrate verify`: prove the copy on the node, in one report.

1. data: the manifest's SHA-256 list checked on the node with `sha256sum -c` (every node, or once on a shared
   filesystem);
2. packages: the node interpreter's distributions, normalised as `capture` normalised the local ones, against the
   manifest (missing or different versions; platform-only packages judged by the node's own marker values);
3. tests: the user's `--test` command, run on the first node in the synced folder.
Any difference makes the exit status 1.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ..spec.errors import SpecError
from .capture import REPORT_SCRIPT, parse_report
from .manifest import Manifest
from .packages import applies, normalise
from .remote import Nodes

TEST_OUTPUT_LINES = 20


@dataclass
class Report:
    lines: list[str] = field(default_factory=list)
    differences: int = 0

    def ok(self, text: str) -> None:
        self.lines.append(f"  ok    {text}")

    def differ(self, text: str) -> None:
        self.differences += 1
        self.lines.append(f"  DIFF  {text}")

    def render(self) -> str:
        verdict = "no differences" if not self.differences else f"{self.differences} difference(s)"
        return "\n".join(["verify:", *self.lines, f"verify: {verdict}"])


def verify(manifest: Manifest, nodes: Nodes, dest: str, shared: bool, python: str, test: str | None) -> Report:
    report = Report()
    for host in (nodes.hosts[:1] if shared else nodes.hosts):
        check_data(manifest, nodes, host, dest, report)
    for host in nodes.hosts:
        check_packages(manifest, nodes, host, python, report)
    if test:
        run_test(nodes, nodes.hosts[0], dest, test, report)
    return report


def check_data(manifest: Manifest, nodes: Nodes, host: str, dest: str, report: Report) -> None:
    sums = manifest.sha256sum_lines()
    count = sum(folder.files for folder in manifest.data)
    if not sums:
        report.ok(f"{host}: data: the manifest lists no data files")
        return
    done = nodes.run(host, f"cd {shlex.quote(dest)} && sha256sum -c --quiet -", stdin=sums)
    if done.returncode == 0:
        report.ok(f"{host}: data: {count} file(s) match their SHA-256 in {dest}")
        return
    # `sha256sum -c` prints "PATH: FAILED" for different content and "PATH: FAILED open or read" for a missing or
    # unreadable file (after its own "sha256sum: PATH: No such file or directory" on stderr).
    found = False
    for line in done.stdout.splitlines():
        if line.endswith(": FAILED open or read"):
            report.differ(f"{host}: data: {line[:-len(': FAILED open or read')]} is missing or unreadable")
            found = True
        elif line.endswith(": FAILED"):
            report.differ(f"{host}: data: {line[:-len(': FAILED')]} differs from its SHA-256 in the manifest")
            found = True
    if not found:
        report.differ(f"{host}: data: sha256sum -c exited {done.returncode}: {_last_line(done)}")


def check_packages(manifest: Manifest, nodes: Nodes, host: str, python: str, report: Report) -> None:
    done = nodes.run(host, f"{shlex.quote(python)} -", stdin=REPORT_SCRIPT.read_text())
    if done.returncode != 0:
        report.differ(f"{host}: packages: {python} could not report its packages ({_last_line(done)})")
        return
    try:
        node = parse_report(done.stdout, "--python", python)
    except SpecError:
        report.differ(f"{host}: packages: {python} on the node printed no package report ({_last_line(done)})")
        return
    installed = {p.name: p for p in normalise(node["packages"])}
    wanted = [p for p in manifest.python.packages if applies(p, node["markers"])]
    before = report.differences
    local_python, node_python = _minor(manifest.python.version), _minor(node["version"])
    if local_python != node_python:
        report.differ(f"{host}: python: {node['version']} on the node, {manifest.python.version} captured")
    for package in wanted:
        found = installed.get(package.name)
        if found is None:
            report.differ(f"{host}: packages: {package.name}=={package.version} is not installed")
        elif found.version != package.version:
            report.differ(f"{host}: packages: {package.name} is {found.version}, the manifest has {package.version}")
    if report.differences == before:
        skipped = len(manifest.python.packages) - len(wanted)
        report.ok(f"{host}: packages: {len(wanted)} match the manifest" +
                  (f" ({skipped} platform-only package(s) do not apply to the node)" if skipped else ""))


def run_test(nodes: Nodes, host: str, dest: str, test: str, report: Report) -> None:
    done = nodes.run(host, f"cd {shlex.quote(dest)} && {test}")
    if done.returncode == 0:
        report.ok(f"{host}: test `{test}` passed")
        return
    report.differ(f"{host}: test `{test}` failed (exit {done.returncode}); its last lines:")
    tail = (done.stdout + done.stderr).rstrip().splitlines()[-TEST_OUTPUT_LINES:]
    report.lines += [f"          {line}" for line in tail]


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _last_line(done) -> str:
    lines = (done.stderr or done.stdout or "").strip().splitlines()
    return lines[-1] if lines else "no output"
