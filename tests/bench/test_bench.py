"""`gpufleet bench STACK` against RECORDED nccl-tests outputs (tests/fixtures/node/perf/README.md): a healthy
two-node p5 run passes, the same run with one node's EFA at half speed is refused, and with four nodes the pairs name
the slow node. The runner is a fake that answers each command with a recording; the commands are checked too."""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
from pathlib import Path

import pytest

from gpufleet.bench.cli import run_bench
from gpufleet.bench.expected import figures_for
from gpufleet.bench.launcher import MpirunLauncher, SlurmLauncher, make_launcher
from gpufleet.bench.nccl import busbw_at
from gpufleet.bench.run import bench, pairings

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "node" / "perf"
HEALTHY, HALF_LINK = (RECORDED / "nccl-2xp5-efa.txt").read_text(), (RECORDED / "nccl-2xp5-efa-half-link.txt").read_text()
P5_TWO_NODE = figures_for("aws", "p5.48xlarge", "H100").allreduce_two_node


class FakeRunner:
    """Answers a launcher's command with the recording for its hosts: slow whenever `slow` is among them."""

    def __init__(self, slow: str | None = None):
        self.slow, self.commands = slow, []

    def __call__(self, command: list[str]) -> tuple[int, str]:
        self.commands.append(command)
        hosts = command[command.index("--host") + 1] if "--host" in command else command[2]
        return 0, HALF_LINK if self.slow and self.slow in hosts else HEALTHY


def test_healthy_two_nodes_pass():
    report = bench(("a", "b"), 8, P5_TWO_NODE, None, MpirunLauncher(), FakeRunner())
    assert report.ok and report.all_nodes.busbw == 440.96 and report.pairs == []
    assert report.all_nodes.detail == "441.0 GB/s >= 349.6 GB/s (figure 436.95 x tolerance 0.8)"


def test_half_speed_efa_is_refused_with_the_figure():
    report = bench(("a", "b"), 8, P5_TWO_NODE, None, MpirunLauncher(), FakeRunner(slow="b"))
    assert not report.ok
    assert report.all_nodes.detail == "220.5 GB/s below 349.6 GB/s (figure 436.95 x tolerance 0.8)"
    assert report.pairs == []  # two nodes: the pair is the cluster


def test_four_nodes_the_pairs_name_the_slow_node():
    runner = FakeRunner(slow="n3")
    report = bench(("n1", "n2", "n3", "n4"), 8, P5_TWO_NODE, None, MpirunLauncher(), runner)
    assert not report.ok and report.suspects == ["n3"]
    slow_pairs = [m.hosts for m in report.pairs if m.ok is False]
    assert slow_pairs == [("n3", "n4"), ("n2", "n3")]
    assert len(runner.commands) == 1 + len(pairings(("n1", "n2", "n3", "n4")))


def test_pairs_are_not_run_when_the_cluster_is_fast():
    runner = FakeRunner()
    report = bench(("n1", "n2", "n3", "n4"), 8, P5_TWO_NODE, None, MpirunLauncher(), runner)
    assert report.ok and report.pairs == [] and len(runner.commands) == 1


def test_pairings_put_every_node_beside_two_neighbours():
    assert pairings(("a", "b", "c", "d")) == [("a", "b"), ("c", "d"), ("b", "c"), ("d", "a")]
    assert pairings(("a", "b", "c")) == [("a", "b"), ("b", "c")]


def test_no_figure_is_measured_but_not_compared():
    none = figures_for("aws", "p4d.24xlarge", "A100").allreduce_two_node
    report = bench(("a", "b"), 8, none, None, MpirunLauncher(), FakeRunner())
    assert report.ok and report.all_nodes.ok is None
    assert report.all_nodes.detail == ("441.0 GB/s; not compared: no published two-node all-reduce figure for "
                                       "aws/p4d.24xlarge")


def test_a_failed_run_or_wrong_results_fail():
    def broken(command):
        return 1, "NCCL WARN NET/OFI Failed to initialize\n"
    report = bench(("a", "b"), 8, P5_TWO_NODE, None, MpirunLauncher(), broken)
    assert not report.ok and "exit 1, no result row" in report.all_nodes.detail
    wrong = HEALTHY.replace("436.95      0   4565.6", "436.95      2   4565.6")
    assert wrong != HEALTHY
    report = bench(("a", "b"), 8, P5_TWO_NODE, None, MpirunLauncher(), lambda c: (0, wrong))
    assert not report.ok and report.all_nodes.detail == "2 wrong result(s) at 1073741824 bytes"


def test_launcher_commands():
    mpirun = make_launcher("mpirun", {"LD_LIBRARY_PATH": "/opt/x", "FI_PROVIDER": "efa", "HOME": "/root"})
    assert mpirun.command(("a", "b"), 8, 1 << 30) == [
        "mpirun", "--allow-run-as-root", "--host", "a:8,b:8", "-np", "16", "-N", "8", "--bind-to", "none",
        "-x", "LD_LIBRARY_PATH", "-x", "FI_PROVIDER",
        "all_reduce_perf", "-b", "1073741824", "-e", "1073741824", "-g", "1", "-c", "1", "-n", "20"]
    assert SlurmLauncher().command(("a", "b"), 8, 1 << 30)[:7] == [
        "srun", "--nodes=2", "--nodelist=a,b", "--ntasks-per-node=8", "--gpus-per-node=8", "--mpi=pmix", "--exclusive"]


def test_the_cli_on_the_shipped_stack(capsys):
    args = argparse.Namespace(stack="aws-train", hosts=["10.0.1.5,10.0.1.6"], hostfile=None, launcher=None,
                              tolerance=None, pairs="auto", overrides=[], dry_run=False, json=False)
    assert run_bench(args, runner=FakeRunner(slow="10.0.1.6")) == 1
    out = capsys.readouterr().out
    assert "aws/p5.48xlarge: expected all-reduce busbw 436.95 GB/s at 1073741824 bytes, floor 349.6 GB/s" in out
    assert "all 2 nodes: SLOW 220.5 GB/s below 349.6 GB/s" in out
    args.json = True
    assert run_bench(args, runner=FakeRunner()) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["all_nodes"]["busbw_gbps"] == 440.96 and document["expected"]["date"] == "2025-09-26"


@pytest.mark.parametrize("overrides, launcher", [([], "mpirun"), (["scheduler.kind=slurm"], "srun")])
def test_a_slurm_cluster_is_benchmarked_through_srun(overrides, launcher, capsys):
    args = argparse.Namespace(stack="aws-train", hosts=["a,b"], hostfile=None, launcher=None, tolerance=None,
                              pairs="auto", overrides=overrides, dry_run=True, json=False)
    assert run_bench(args) == 0
    assert capsys.readouterr().out.split()[0] == launcher


@pytest.mark.parametrize("change, field", [
    ({"hosts": ["only-one"]}, "--hosts"),
    ({"hosts": ["a,a"]}, "--hosts"),
    ({"tolerance": 1.5}, "--tolerance"),
    ({"hostfile": Path("/nonexistent/hosts")}, "--hostfile"),
])
def test_bad_input_is_one_message_and_exit_2(change, field, capsys):
    args = argparse.Namespace(stack="aws-train", hosts=["a,b"], hostfile=None, launcher=None, tolerance=None,
                              pairs="auto", overrides=[], dry_run=False, json=False)
    for key, value in change.items():
        setattr(args, key, value)
    assert run_bench(args, runner=FakeRunner()) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: invalid `gpufleet bench`") and f"`{field}`" in err


def test_the_node_and_the_bench_parse_nccl_tests_alike():
    """perf-check (shipped to nodes, no imports from components) and gpufleet bench read the same rows."""
    path = REPO / "cloud_init" / "files" / "usr" / "local" / "lib" / "gpufleet" / "perf-check"
    loader = importlib.machinery.SourceFileLoader("perf_check_copy", str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("perf_check_copy", loader))
    loader.exec_module(module)
    for fixture in sorted(RECORDED.glob("nccl-*.txt")):
        text = fixture.read_text()
        for size in (1 << 20, 1 << 30, 17179869184):
            row = busbw_at(text, size)
            assert module.parse_nccl_busbw(text, size) == ((row.busbw, row.wrong) if row else (None, None))


TCPXO_ALLGATHER = (RECORDED / "nccl-2xa3mega-tcpxo-allgather.txt").read_text()


class RecordingRunner:
    """Answers every command with one recording."""

    def __init__(self, output: str):
        self.output, self.commands = output, []

    def __call__(self, command: list[str]) -> tuple[int, str]:
        self.commands.append(command)
        return 0, self.output


def test_gcp_train_runs_all_gather_and_is_compared_with_googles_tcpxo_figure(capsys):
    """gcp-train runs GPUDirect-TCPXO: Google publishes its two-node run as all_gather_perf, so the bench runs that
    collective and compares with 182.00 GB/s at 1 GiB (floor 0.8 of it); Google's own recording passes."""
    args = argparse.Namespace(stack="gcp-train", hosts=["10.0.0.2,10.0.0.3"], hostfile=None, launcher=None,
                              tolerance=None, pairs="auto", overrides=[], dry_run=False, json=True)
    runner = RecordingRunner(TCPXO_ALLGATHER)
    assert run_bench(args, runner=runner) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["expected"]["collective"] == "all_gather" and document["expected"]["busbw_gbps"] == 182.0
    assert document["all_nodes"]["ok"] is True and document["all_nodes"]["busbw_gbps"] == 183.38  # as bench reads rows
    assert all("all_gather_perf" in command and "all_reduce_perf" not in command for command in runner.commands)


def test_gcp_train_without_tcpxo_is_measured_against_no_figure(capsys):
    """Without the opt-ins gcp-train runs NCCL over TCP on nine gVNIC NICs: no public figure exists, so it is
    measured, not compared."""
    args = argparse.Namespace(stack="gcp-train", hosts=["10.0.0.2,10.0.0.3"], hostfile=None, launcher=None,
                              tolerance=None, pairs="auto", overrides=["gpudirect.trust_google_images=false"],
                              dry_run=False, json=True)
    assert run_bench(args, runner=FakeRunner()) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["all_nodes"]["ok"] is None
    assert "not compared: no public two-node nccl-tests run over NCCL's socket transport on A3 Mega's nine" in (
        document["all_nodes"]["detail"])
