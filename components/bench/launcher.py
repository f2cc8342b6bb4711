"""How `gpufleet bench` starts nccl-tests across nodes. A launcher turns (hosts, GPUs per node, message size) into
one command line; a runner executes it and returns (exit code, output).

- `MpirunLauncher`: Open MPI's `mpirun` over the hosts (one rank per GPU), run from a node or a login host that
  reaches every node over SSH, with nccl-tests and the fabric's NCCL plugin on each node (the node's
  /etc/gpufleet/job.env carries the NCCL variables; `-x` passes them on).
- `SlurmLauncher`: `srun` inside an allocation of those nodes (PMIx), for clusters that run Slurm.
The Slurm scheduler component lands separately; until the spec names one, `--launcher slurm` chooses it by hand.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from typing import Protocol

NCCL_TESTS_BIN = "all_reduce_perf"
# The NCCL variables a run needs on every rank; the node's job.env sets them, mpirun must forward them.
FORWARDED = ("LD_LIBRARY_PATH", "NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "NCCL_NET", "NCCL_TOPO_FILE",
             "NCCL_IB_HCA", "FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD")


class Launcher(Protocol):
    @property
    def name(self) -> str: ...

    def command(self, hosts: tuple[str, ...], gpus_per_node: int, size: int) -> list[str]:
        """The command line that runs all_reduce_perf at `size` bytes over all GPUs of `hosts`."""
        ...


def nccl_args(size: int, binary: str) -> list[str]:
    """One message size, 20 timed iterations, results checked: a pass/fail row, not a sweep."""
    return [binary, "-b", str(size), "-e", str(size), "-g", "1", "-c", "1", "-n", "20"]


@dataclass(frozen=True)
class MpirunLauncher:
    binary: str = NCCL_TESTS_BIN
    mpirun: str = "mpirun"
    name: str = "mpirun"
    forward: tuple[str, ...] = ()  # the FORWARDED variables set where gpufleet bench runs (source job.env first)

    def command(self, hosts: tuple[str, ...], gpus_per_node: int, size: int) -> list[str]:
        forwarded = [arg for name in self.forward for arg in ("-x", name)]
        return [self.mpirun, "--allow-run-as-root", "--host", ",".join(f"{h}:{gpus_per_node}" for h in hosts),
                "-np", str(gpus_per_node * len(hosts)), "-N", str(gpus_per_node), "--bind-to", "none",
                *forwarded, *nccl_args(size, self.binary)]


@dataclass(frozen=True)
class SlurmLauncher:
    binary: str = NCCL_TESTS_BIN
    name: str = "slurm"
    partition: str | None = None
    """The node group's partition, for a cluster of node groups (its nodes are in no other); None: the default."""

    def command(self, hosts: tuple[str, ...], gpus_per_node: int, size: int) -> list[str]:
        partition = [f"--partition={self.partition}"] if self.partition else []
        return ["srun", *partition, f"--nodes={len(hosts)}", f"--nodelist={','.join(hosts)}",
                f"--ntasks-per-node={gpus_per_node}", f"--gpus-per-node={gpus_per_node}", "--mpi=pmix",
                "--exclusive", *nccl_args(size, self.binary)]


LAUNCHERS = ("mpirun", "slurm")


def make_launcher(name: str, environ: dict[str, str], binary: str = NCCL_TESTS_BIN,
                  partition: str | None = None) -> Launcher:
    """`binary`: the nccl-tests program of the figure's collective (`all_reduce_perf`, `all_gather_perf`);
    `partition`: the node group's Slurm partition, for a cluster of node groups."""
    if name == "slurm":
        return SlurmLauncher(binary=binary, partition=partition)
    return MpirunLauncher(binary=binary, forward=tuple(v for v in FORWARDED if v in environ))


class Runner(Protocol):
    def __call__(self, command: list[str]) -> tuple[int, str]: ...


def local_runner(timeout: int = 1800) -> Runner:
    """Runs the command here; the launcher reaches the other nodes."""
    def run(command: list[str]) -> tuple[int, str]:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            return 127, f"{command[0]}: not found"
        except subprocess.TimeoutExpired:
            return 124, f"{shlex.join(command)}: timed out after {timeout}s"
        return done.returncode, done.stdout + done.stderr
    return run
