"""slurm.conf for elastic node groups: Slurm's power saving, the groups' State=CLOUD nodes and their partitions.

Pure functions of small dataclasses, returning lines for `conf.py` to place (it owns the file's layout):
- `power_saving_lines(groups, ...)`: the programs, the timeouts and SuspendExcNodes, once per cluster;
- `slurmctld_parameters(release)`: words to add to the one `SlurmctldParameters=` line conf.py already writes;
- `cloud_node_lines(group)`: `NodeName=<prefix>[1-<max>] State=CLOUD ...` with the resources the scheduler places
  jobs by, so a job can be scheduled onto a node that does not exist yet;
- `partition_lines(group)`: the group's NodeSet (by its feature, as fixed groups have) and its partition, with the
  group's own SuspendTime and ResumeTimeout.

Why the values are what they are (slurm.conf(5) of Debian's slurm-client 22.05.8, SchedMD/slurm 22.05 and 23.11
sources; see gpufleet.cloud_init.power for the programs' side):
- SuspendTime is INFINITE for the cluster and set per elastic partition only: power saving then runs for the
  elastic partitions' nodes and never suspends a fixed group's dynamic nodes (power_save.c `_init_power_config`
  enables it when any partition sets SuspendTime; nodes outside such partitions keep the cluster's INFINITE).
- ResumeTimeout per partition: a node not registered by then is DOWN ("ResumeTimeout reached"), its jobs requeued,
  and ResumeFailProgram deletes what was launched. For nodes in several partitions the highest value wins.
- SuspendTimeout is the time an instance's deletion may take before the node name may be resumed again (GCP names
  instances after their node, and a name is free only once the old instance is gone): slurm-gcp uses 300 s.
- SuspendExcNodes `<nodes>:<min>` keeps `min` usable nodes of the group from being powered down; the power engine's
  `sync` powers them up in the first place (nothing else would: a CLOUD node starts powered down).
- ResumeRate and SuspendRate 0: no limit (the defaults, 300 and 60 nodes a minute, would split a large job's resume).
- Slurm 22.05 needs `SlurmctldParameters=cloud_reg_addrs` (a registering cloud node's address becomes its NodeAddr;
  the names are not in DNS) and `PrivateData=cloud` (powered-down cloud nodes shown in sinfo, also to SlurmUser, which
  the programs read); 23.11 does both by default and logs an error for `cloud_reg_addrs`.
- CLOUD nodes count against MaxNodeCount: conf.py's count of dynamic nodes must add `cloud_node_count(groups)`.
- RealMemory is what the scheduler hands out with CR_Core_Memory, so a node must register with at least that much
  (a CLOUD node may register with down to 90% of it: `node_reg_mem_percent`); `real_memory_mib` keeps 5% of the
  type's memory for the OS.
"""

from __future__ import annotations

from dataclasses import dataclass

SLURM_23_11 = (23, 11)
PROGRAM_DIR = "/usr/local/sbin"
RESUME_PROGRAM = f"{PROGRAM_DIR}/gpufleet-slurm-resume"
SUSPEND_PROGRAM = f"{PROGRAM_DIR}/gpufleet-slurm-suspend"
RESUME_FAIL_PROGRAM = f"{PROGRAM_DIR}/gpufleet-slurm-resume-fail"
DEFAULT_SUSPEND_TIME_S = 600
DEFAULT_SUSPEND_TIMEOUT_S = 300
OS_MEMORY_SHARE = 0.05


@dataclass(frozen=True, kw_only=True)
class ElasticGroup:
    """One elastic node group as slurm.conf needs it."""

    name: str
    """The group's name: its NodeSet and its nodes' feature."""
    partition: str
    node_prefix: str
    """Node names are `node_prefix` + 1..max_nodes (the power config uses the same prefix)."""
    max_nodes: int
    gpus: int
    cpus: int
    memory_mib: int
    """RealMemory: see `real_memory_mib`."""
    min_nodes: int = 0
    features: tuple[str, ...] = ()
    """More features besides the group's name (instance type, fabric, zone), for `--constraint`."""
    suspend_time_s: int = DEFAULT_SUSPEND_TIME_S
    resume_timeout_s: int = 1800
    default: bool = False
    """The cluster's default partition."""

    def __post_init__(self) -> None:
        if not 0 <= self.min_nodes <= self.max_nodes or self.max_nodes < 1:
            raise ValueError(f"ElasticGroup {self.name}: min_nodes {self.min_nodes}, max_nodes {self.max_nodes}; "
                             "expected 0 <= min_nodes <= max_nodes and max_nodes >= 1")
        if self.suspend_time_s < 1 or self.resume_timeout_s < 1:
            raise ValueError(f"ElasticGroup {self.name}: suspend_time_s and resume_timeout_s must be positive")

    @property
    def nodes(self) -> str:
        """The group's node names as a Slurm hostlist expression."""
        return f"{self.node_prefix}1" if self.max_nodes == 1 else f"{self.node_prefix}[1-{self.max_nodes}]"


@dataclass(frozen=True, kw_only=True)
class PowerPrograms:
    resume: str = RESUME_PROGRAM
    suspend: str = SUSPEND_PROGRAM
    resume_fail: str = RESUME_FAIL_PROGRAM


def real_memory_mib(memory_gib: float) -> int:
    """RealMemory for a type with `memory_gib` (the catalog's `InstanceType.memory_gib`): 95% of it, in MiB."""
    return int(memory_gib * 1024 * (1 - OS_MEMORY_SHARE))


def power_saving_lines(groups: tuple[ElasticGroup, ...], programs: PowerPrograms = PowerPrograms(),
                       suspend_timeout_s: int = DEFAULT_SUSPEND_TIMEOUT_S,
                       slurm_release: tuple[int, int] = SLURM_23_11) -> list[str]:
    """The cluster-wide power-saving keys; none without elastic groups."""
    if not groups:
        return []
    lines = [
        f"SuspendProgram={programs.suspend}",
        f"ResumeProgram={programs.resume}",
        f"ResumeFailProgram={programs.resume_fail}",
        "SuspendTime=INFINITE",
        f"SuspendTimeout={suspend_timeout_s}",
        f"ResumeTimeout={max(group.resume_timeout_s for group in groups)}",
        "ResumeRate=0",
        "SuspendRate=0",
    ]
    kept = [f"{group.nodes}:{group.min_nodes}" for group in groups if group.min_nodes]
    if kept:
        lines.append(f"SuspendExcNodes={','.join(kept)}")
    if slurm_release < (23, 2):
        lines.append("PrivateData=cloud")
    return lines


def slurmctld_parameters(groups: tuple[ElasticGroup, ...], slurm_release: tuple[int, int] = SLURM_23_11
                         ) -> tuple[str, ...]:
    """Words for conf.py's `SlurmctldParameters=` line (after `enable_configless`)."""
    return ("cloud_reg_addrs",) if groups and slurm_release < SLURM_23_11 else ()


def cloud_node_lines(group: ElasticGroup) -> list[str]:
    features = ",".join(dict.fromkeys((group.name, *group.features)))
    gres = f" Gres=gpu:{group.gpus}" if group.gpus else ""
    return [f"NodeName={group.nodes} State=CLOUD CPUs={group.cpus} RealMemory={group.memory_mib}{gres} "
            f"Features={features}"]


def nodeset_line(group: ElasticGroup) -> str:
    """The group's NodeSet, by feature, the form fixed groups use (their dynamic nodes register with the feature)."""
    return f"NodeSet={group.name} Feature={group.name}"


def partition_lines(group: ElasticGroup) -> list[str]:
    return [nodeset_line(group),
            f"PartitionName={group.partition} Nodes={group.name} Default={'YES' if group.default else 'NO'} "
            f"MaxTime=INFINITE State=UP OverSubscribe=NO SuspendTime={group.suspend_time_s} "
            f"ResumeTimeout={group.resume_timeout_s}"]


def cloud_node_count(groups: tuple[ElasticGroup, ...]) -> int:
    """How many nodes the groups declare: MaxNodeCount must be at least the dynamic nodes' count plus this."""
    return sum(group.max_nodes for group in groups)
