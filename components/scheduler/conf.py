"""The configuration slurmctld serves to every node (configless mode: nodes fetch it with `slurmd --conf-server`).

Topology: every node of a gpufleet cluster is in one zone and, for multi-node and RDMA clusters, one placement
group, so Slurm's flat default already keeps a job inside it. No topology.conf is rendered: a `topology/tree`
switch must list its nodes, which dynamic nodes make impossible (slurmctld refuses an empty switch: "switch ...
has neither child switches nor nodes"). The placement group (or zone) is a node feature instead, for `--constraint`.

Nodes are dynamic (`slurmd -Z`, Slurm 22.05+): slurm.conf lists none of them, only how many may register
(`MaxNodeCount`), so scaling the fleet never rewrites the controller's files. Every path named here is a file the
node's cloud-config writes (cloud_init/files/usr/local/lib/gpufleet/slurm/).

Node groups (`node_groups`): each group is a partition over a NodeSet of the nodes that register with the group's
name as a feature (slurm.conf(5) NodeSet `Feature=`; Debian's slurmctld 22.05 places dynamic nodes this way, as
tests/scheduler shows). One gres.conf serves every group: it lists the devices of the largest node, and slurmd
takes as many as its registration's `Gres=gpu:N` asks for, ignoring the rest ("Ignoring extra GRES", seen in
slurmd's log on 22.05). `MaxNodeCount` is the spec's bound on a cluster's nodes (4,096, all groups together) and
room for replacements, never the node count: a change of `nodes` must not rewrite the controller's files, which
would replace the controller (its user data changes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpufleet.cloud_init.config import SlurmNodeConfig

from ..spec.model import MAX_CLUSTER_NODES
from . import power

if TYPE_CHECKING:
    from ..catalog.selector import Selection
    from ..groups.plans import NodeGroupPlans

SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
# srun listens on a fixed range, so the firewall opens a known range instead of every ephemeral port.
SRUN_PORT_RANGE = (60001, 63000)
SLURM_PORTS = ((SLURMCTLD_PORT, SLURMCTLD_PORT), (SLURMD_PORT, SLURMD_PORT), SRUN_PORT_RANGE)
STATE_DIR = "/var/lib/gpufleet-slurm"
SLURM_LIB = "/usr/local/lib/gpufleet/slurm"
HEALTH_CHECK = f"{SLURM_LIB}/health-check"
TASK_PROLOG = f"{SLURM_LIB}/task-prolog"
# The job's GPUs -> its job id for dcgm-exporter's hpc_job label (the jobs dashboard), set and cleared per job.
PROLOG = f"{SLURM_LIB}/prolog"
EPILOG = f"{SLURM_LIB}/epilog"
HEALTH_CHECK_INTERVAL_S = 300
# Room above the most nodes for replacements that register before the nodes they replace are deleted.
SPARE_NODE_SLOTS = 16
CLUSTER_NAME = re.compile(r"[^a-z0-9]")


@dataclass(frozen=True)
class Partition:
    """One node group's partition: its nodes are those registered with the group's feature."""

    name: str
    group: str
    default: bool


@dataclass(frozen=True)
class SlurmSettings:
    """Everything the controller's files depend on; the same settings render the same bytes."""

    cluster_name: str
    controller_host: str
    partition: str
    max_nodes: int
    gpus_per_node: int
    requeue: bool = True
    switch: str = "zone"
    nvml: bool = False
    controller_address: str = ""
    """The controller's private address, so nodes reach `SlurmctldHost` without DNS (empty: by name)."""
    partitions: tuple[Partition, ...] = ()
    """With node groups, one partition per group; empty for a spec without groups, whose one partition
    (`partition`) holds every node."""
    elastic: tuple[power.ElasticGroup, ...] = ()
    """Elastic groups (`gpufleet.scheduler.elastic.elastic_settings`): their CLOUD nodes and partitions, and the
    cluster's power saving; none in `partitions`. Empty: the file is what it was before elastic groups existed."""
    slurm_release: tuple[int, int] = power.SLURM_23_11
    """The controller's Slurm (Ubuntu 24.04's 23.11); the power-saving keys differ before 23.02."""

    @property
    def slurm_cluster_name(self) -> str:
        """Slurm cluster names are lower case, at most 40 characters (accounting keys its tables by them)."""
        return CLUSTER_NAME.sub("_", self.cluster_name.lower())[:40] or "gpufleet"


def slurm_settings(selection: Selection, cluster_name: str, controller_address: str = "") -> SlurmSettings:
    spec = selection.spec
    slurm = spec.scheduler.slurm
    switch = f"{spec.region}-{spec.zone}" if spec.cloud == "azure" else (spec.zone or spec.region)
    return SlurmSettings(cluster_name=cluster_name, controller_host=controller_hostname(cluster_name),
                         partition=slurm.partition, max_nodes=MAX_CLUSTER_NODES + SPARE_NODE_SLOTS,
                         gpus_per_node=selection.instance.gpus, requeue=slurm.requeue,
                         switch=CLUSTER_NAME.sub("-", switch.lower()), controller_address=controller_address)


def controller_settings(plans: NodeGroupPlans, cluster_name: str, controller_address: str = "") -> SlurmSettings:
    """The controller's settings: the one group's, or with node groups a partition per group, GRES devices for the
    largest node."""
    settings = slurm_settings(plans.first, cluster_name, controller_address)
    if not plans.grouped:
        return settings
    return replace(settings, partition=plans.first.spec.scheduler.slurm.partition,
                   gpus_per_node=max(plan.instance.gpus for plan in plans.groups),
                   partitions=tuple(Partition(plan.spec.scheduler.slurm.partition, plan.group, plan.slurm_default)
                                    for plan in plans.groups))


def controller_hostname(cluster_name: str) -> str:
    """The controller's short host name: SlurmctldHost must equal it."""
    return (CLUSTER_NAME.sub("-", cluster_name.lower())[:40].strip("-") or "gpufleet") + "-slurmctld"


def slurm_conf(settings: SlurmSettings) -> str:
    lines = [
        f"ClusterName={settings.slurm_cluster_name}",
        f"SlurmctldHost={settings.controller_host}" + (f"({settings.controller_address})"
                                                         if settings.controller_address else ""),
        # Nodes fetch this file, gres.conf, cgroup.conf and topology.conf from slurmctld.
        "SlurmctldParameters=" + ",".join(("enable_configless",
                                           *power.slurmctld_parameters(settings.elastic, settings.slurm_release))),
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "SlurmUser=slurm",
        f"SlurmctldPort={SLURMCTLD_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        f"SrunPortRange={SRUN_PORT_RANGE[0]}-{SRUN_PORT_RANGE[1]}",
        f"StateSaveLocation={STATE_DIR}/state",
        "SlurmdSpoolDir=/var/spool/slurmd",
        "SlurmctldPidFile=/run/slurmctld.pid",
        "SlurmdPidFile=/run/slurmd.pid",
        "SlurmctldLogFile=/var/log/slurm/slurmctld.log",
        "SlurmdLogFile=/var/log/slurm/slurmd.log",
        # Dynamic nodes (`slurmd -Z`) register themselves; this bounds how many may.
        f"MaxNodeCount={settings.max_nodes + power.cloud_node_count(settings.elastic)}",
        "TreeWidth=65533",
        # A rebooted node comes back under its name and returns to service once slurmd registers healthy.
        "ReturnToService=2",
        f"JobRequeue={1 if settings.requeue else 0}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "GresTypes=gpu",
        "ProctrackType=proctrack/cgroup",
        "TaskPlugin=task/cgroup,task/affinity",
        "MpiDefault=none",
        f"TaskProlog={TASK_PROLOG}",
        f"Prolog={PROLOG}",
        f"Epilog={EPILOG}",
        f"HealthCheckProgram={HEALTH_CHECK}",
        f"HealthCheckInterval={HEALTH_CHECK_INTERVAL_S}",
        "HealthCheckNodeState=ANY,CYCLE",
        "SlurmctldTimeout=120",
        "SlurmdTimeout=300",
        "InactiveLimit=0",
        "KillWait=30",
        "Waittime=0",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/cgroup",
        *power.power_saving_lines(settings.elastic, slurm_release=settings.slurm_release),
        *(line for group in settings.elastic for line in power.cloud_node_lines(group)),
        *partition_lines(settings),
    ]
    return _file("slurm.conf", lines)


def partition_lines(settings: SlurmSettings) -> list[str]:
    """Every node in the one partition; with node groups, a NodeSet and a partition per group; an elastic group's
    partition carries its own SuspendTime and ResumeTimeout (`power.partition_lines`)."""
    if not settings.partitions and not settings.elastic:
        return [f"PartitionName={settings.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"]
    elastic = [power.partition_lines(group) for group in settings.elastic]
    lines = [f"NodeSet={p.group} Feature={p.group}" for p in settings.partitions] + [pair[0] for pair in elastic]
    lines += [f"PartitionName={p.name} Nodes={p.group} Default={'YES' if p.default else 'NO'} MaxTime=INFINITE "
              "State=UP OverSubscribe=NO" for p in settings.partitions]
    return lines + [pair[1] for pair in elastic]


def cgroup_conf() -> str:
    """cgroup v2 confines each job to the GPUs, cores and memory it was given."""
    return _file("cgroup.conf", ["CgroupPlugin=cgroup/v2", "ConstrainCores=yes", "ConstrainDevices=yes",
                                 "ConstrainRAMSpace=yes", "ConstrainSwapSpace=yes"])


def gres_conf(settings: SlurmSettings) -> str:
    """GPUs as GRES. A Slurm built without NVML (Ubuntu's and Debian's main archives) would report 0 GPUs against
    the configured count and drain the node, so without NVML the device files are listed."""
    if settings.nvml:
        return _file("gres.conf", ["AutoDetect=nvml"])
    last = settings.gpus_per_node - 1
    files = "/dev/nvidia0" if last == 0 else f"/dev/nvidia[0-{last}]"
    return _file("gres.conf", ["AutoDetect=off", f"Name=gpu File={files}"])


def node_registration(settings: SlurmSettings, instance_type: str, fabric: str, group: str | None = None) -> str:
    """The `slurmd -Z --conf` line: GPUs as GRES and features a job can ask for with `--constraint`; with node
    groups, the group's name, which places the node in its group's partition."""
    features = ",".join(sorted({instance_type.replace("_", "-").lower(), fabric, settings.switch} | {group} - {None}))
    return f"Gres=gpu:{settings.gpus_per_node} Feature={features}"


def controller_files(settings: SlurmSettings) -> dict[str, str]:
    """/etc/slurm/<name> -> content, for the controller's cloud-config."""
    return {"slurm.conf": slurm_conf(settings), "cgroup.conf": cgroup_conf(), "gres.conf": gres_conf(settings)}


def _file(name: str, lines: list[str]) -> str:
    return f"# gpufleet: {name} served to the nodes by slurmctld (configless); rendered by gpufleet.scheduler\n" + \
        "\n".join(lines) + "\n"


def slurm_node_config(selection: Selection, cluster_name: str, group: str | None = None) -> SlurmNodeConfig | None:
    """What a GPU node needs to join (cloud_init), or None without a scheduler: its user data is then unchanged."""
    if selection.spec.scheduler.kind != "slurm":
        return None
    settings = slurm_settings(selection, cluster_name)
    fabric = selection.fabric or "tcp"
    return SlurmNodeConfig(node_conf=node_registration(settings, selection.instance.name, fabric, group),
                           requeue=settings.requeue, cloud_node=selection.spec.nodes_range is not None)
