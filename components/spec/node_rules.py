"""Plan-time rules for `node`: driver, CUDA, kernel modules, MIG and MPS, checked against the catalog's GPU facts.

Each rule is one small function returning problems (R7). Facts are tables, not branches in code:
- driver branches and their end of life: NVIDIA "Supported Drivers and CUDA Toolkit Versions"
  (shared/reference/node-software-stack.md 1.1); 550, 570 and 575 are no longer listed there;
- minimum driver per CUDA major: CUDA minor-version compatibility, Table 1 (same file, 1.7);
- architectures per kernel-module flavor and CUDA 13's dropped architectures (same file, 1.1 and 1.2).
The selector calls `check_node_software(selection)` and raises every problem together.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from ..catalog.deployable import node_stack_gaps
from .errors import Problem

if TYPE_CHECKING:
    from ..catalog.selection import Selection


@dataclass(frozen=True)
class DriverBranch:
    designation: str
    end_of_life: date


DRIVER_BRANCHES = {
    "535": DriverBranch("LTSB", date(2026, 6, 30)),
    "580": DriverBranch("LTSB", date(2028, 6, 30)),
    "595": DriverBranch("Production Branch", date(2027, 3, 31)),
    "610": DriverBranch("New Feature Branch", date(2026, 8, 31)),
    "620": DriverBranch("LTSB", date(2029, 9, 30)),
}
UNSUPPORTED_BRANCHES = ("550", "570", "575")  # no longer listed by NVIDIA
CUDA_MIN_DRIVER_BRANCH = {"11": 450, "12": 525, "13": 580}
# Architectures each CUDA major no longer supports (CUDA 13 drops Maxwell, Pascal and Volta).
CUDA_DROPPED_ARCHITECTURES = {"13": ("maxwell", "pascal", "volta")}
# Open kernel modules run on Turing and newer only; R580 is the last branch for Maxwell, Pascal and Volta.
PRE_TURING = ("maxwell", "pascal", "volta")
LAST_BRANCH_PRE_TURING = 580
MIG_COMPUTE_SLICES = 7
MIG_MEMORY_SLICES = 8
MIG_PROFILE = re.compile(r"^(?P<compute>\d)g\.(?P<memory>\d+)gb(?P<me>\+me)?$")
# EFA variables that are obsolete with the EFA installer gpufleet pins (libfabric >= 1.18, aws-ofi-nccl >= 1.7), and
# why: aws-samples/awsome-distributed-training efa-cheatsheet.md (shared/reference/networking-aws-azure-gcp.md 1.5).
OBSOLETE_EFA_ENV = {
    "FI_PROVIDER": "only needed with aws-ofi-nccl 1.5.0 or older",
    "NCCL_PROTO": "only needed with aws-ofi-nccl 1.5.0 or older",
    "FI_EFA_USE_DEVICE_RDMA": "not to be set with libfabric 1.18 or newer",
    "FI_EFA_FORK_SAFE": "not needed on kernels 5.15 and newer",
    "FI_EFA_SET_CUDA_SYNC_MEMOPS": "only for EFA installers older than 1.29.1",
}
# What `node.nccl.env` may set: NCCL and its network plugins (libfabric, aws-ofi-nccl, UCX), PyTorch's NCCL knobs
# and CUDA's. Anything else (PATH, LD_PRELOAD, ...) would change every login shell through /etc/gpufleet/job.env.
NCCL_ENV_PREFIXES = ("NCCL_", "FI_", "OFI_NCCL_", "UCX_", "TORCH_NCCL_", "CUDA_")
UNSAFE_ENV_CHARS = ("'", "\\", "\n", '"', "`", "$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def min_driver_branch(cuda: str) -> int:
    """The oldest driver branch that runs CUDA `cuda` ("13.0" -> 580); 0 for an unknown major."""
    return CUDA_MIN_DRIVER_BRANCH.get(cuda.split(".")[0], 0)


def supported_branches(today: date) -> list[str]:
    return [b for b, info in DRIVER_BRANCHES.items() if info.end_of_life >= today]


def driver_branch_is_supported(selection: Selection, today: date) -> list[Problem]:
    branch = selection.spec.node.driver.branch
    info = DRIVER_BRANCHES.get(branch)
    accepted = f"use a supported branch: {', '.join(supported_branches(today))}"
    if info is None:
        why = "is no longer supported by NVIDIA" if branch in UNSUPPORTED_BRANCHES else "is not a known driver branch"
        return [Problem("node.driver.branch", branch, f"R{branch} {why}; {accepted}")]
    if info.end_of_life < today:
        return [Problem("node.driver.branch", branch, f"R{branch} ({info.designation}) reached end of life on "
                        f"{info.end_of_life.isoformat()}; {accepted}")]
    return []


def cuda_runs_on_branch(selection: Selection, today: date) -> list[Problem]:
    node = selection.spec.node
    major = node.cuda.split(".")[0]
    if major not in CUDA_MIN_DRIVER_BRANCH:
        return [Problem("node.cuda", node.cuda, f"expected CUDA {', '.join(f'{m}.x' for m in CUDA_MIN_DRIVER_BRANCH)}")]
    needed = CUDA_MIN_DRIVER_BRANCH[major]
    if int(node.driver.branch) < needed:
        return [Problem("node.cuda", node.cuda, f"CUDA {major}.x needs driver branch {needed} or newer, and "
                        f"`node.driver.branch` is {node.driver.branch!r}; raise the branch or lower `node.cuda`")]
    return []


def cuda_supports_gpu(selection: Selection, today: date) -> list[Problem]:
    cuda, gpu = selection.spec.node.cuda, selection.gpu
    if gpu.architecture in CUDA_DROPPED_ARCHITECTURES.get(cuda.split(".")[0], ()):
        return [Problem("node.cuda", cuda, f"CUDA {cuda.split('.')[0]} does not support {gpu.model} "
                        f"({gpu.architecture}); use CUDA 12.x")]
    return []


def module_flavor_fits_gpu(selection: Selection, today: date) -> list[Problem]:
    driver, gpu = selection.spec.node.driver, selection.gpu
    if driver.flavor == "proprietary" and gpu.open_modules_required:
        return [Problem("node.driver.flavor", driver.flavor, f"{gpu.model} ({gpu.architecture}) requires the open "
                        "kernel modules; use `open` or `auto`")]
    if driver.flavor == "open" and gpu.architecture in PRE_TURING:
        return [Problem("node.driver.flavor", driver.flavor, f"open kernel modules need Turing or newer and "
                        f"{gpu.model} is {gpu.architecture}; use `proprietary` or `auto`")]
    return []


def branch_supports_gpu(selection: Selection, today: date) -> list[Problem]:
    branch, gpu = selection.spec.node.driver.branch, selection.gpu
    if gpu.architecture in PRE_TURING and branch.isdigit() and int(branch) > LAST_BRANCH_PRE_TURING:
        return [Problem("node.driver.branch", branch, f"R{LAST_BRANCH_PRE_TURING} is the last branch for "
                        f"{gpu.architecture} GPUs like {gpu.model}; use {LAST_BRANCH_PRE_TURING}")]
    return []


def mig_profiles_fit_gpu(selection: Selection, today: date) -> list[Problem]:
    profiles, gpu = selection.spec.node.mig.profiles, selection.gpu
    if not profiles:
        return []
    if not gpu.mig_profiles:
        return [Problem("node.mig.profiles", profiles, f"{gpu.model} does not support MIG; remove `node.mig`")]
    problems = [Problem(f"node.mig.profiles[{i}]", p, f"not a MIG profile of {gpu.model}; expected one of "
                        f"{', '.join(gpu.mig_profiles)}")
                for i, p in enumerate(profiles) if p not in gpu.mig_profiles]
    if problems:
        return problems
    return _mig_capacity(profiles, gpu.mig_profiles, gpu.model) + _mig_driver(selection)


def _mig_capacity(profiles: list[str], offered: tuple[str, ...], model: str) -> list[Problem]:
    full_gib = max(int(MIG_PROFILE.match(p)["memory"]) for p in offered)
    compute = memory = media = 0
    for profile in profiles:
        match = MIG_PROFILE.match(profile)
        compute += int(match["compute"])
        memory += max(1, round(int(match["memory"]) * MIG_MEMORY_SLICES / full_gib))
        media += 1 if match["me"] else 0
    if compute > MIG_COMPUTE_SLICES or memory > MIG_MEMORY_SLICES or media > 1:
        return [Problem("node.mig.profiles", profiles, f"does not fit one {model}: it uses {compute}/7 compute and "
                        f"{memory}/8 memory slices{' and more than one +me profile' if media > 1 else ''}; "
                        "e.g. ['3g.40gb', '3g.40gb'] or ['7g.80gb'] on an 80 GB GPU")]
    return []


def _mig_driver(selection: Selection) -> list[Problem]:
    branch, gpu = selection.spec.node.driver.branch, selection.gpu
    needed = (gpu.mig_min_driver or "0").split(".")[0]
    if branch.isdigit() and int(branch) < int(needed):
        return [Problem("node.driver.branch", branch, f"MIG on {gpu.model} needs driver {gpu.mig_min_driver} or "
                        "newer; raise the branch or remove `node.mig`")]
    return []


def mps_fits_mig(selection: Selection, today: date) -> list[Problem]:
    node = selection.spec.node
    problems = []
    if node.mps.enabled and node.mig.profiles:
        problems.append(Problem("node.mps.enabled", True, "MPS with MIG needs one MPS daemon per MIG instance, which "
                                "gpufleet does not set up; use MIG for isolation or MPS for sharing, not both"))
    if node.mps.active_thread_percentage is not None and not node.mps.enabled:
        problems.append(Problem("node.mps.active_thread_percentage", node.mps.active_thread_percentage,
                                "only applies with `node.mps.enabled: true`"))
    return problems


def nccl_env_is_safe(selection: Selection, today: date) -> list[Problem]:
    problems = []
    for name, value in selection.spec.node.nccl.env.items():
        if not ENV_NAME.match(name):
            problems.append(Problem(f"node.nccl.env.{name}", name, "variable names are upper-case letters, digits "
                                    "and underscores, e.g. NCCL_IB_HCA"))
        elif not name.startswith(NCCL_ENV_PREFIXES):
            problems.append(Problem(f"node.nccl.env.{name}", name, "expected a communication variable starting with "
                                    f"{', '.join(NCCL_ENV_PREFIXES)} (it lands in every login shell and job)"))
        elif any(c in value for c in UNSAFE_ENV_CHARS) or not value:
            problems.append(Problem(f"node.nccl.env.{name}", value, "expected a non-empty value without quotes, "
                                    "backslashes, `$`, backticks or newlines"))
    return problems


def nccl_env_is_current_for_efa(selection: Selection, today: date) -> list[Problem]:
    if selection.fabric != "efa":
        return []
    problems = []
    for name in selection.spec.node.nccl.env:
        why = OBSOLETE_EFA_ENV.get(name)  # RDMAV_* ("never use") is outside NCCL_ENV_PREFIXES, refused everywhere
        if why:
            problems.append(Problem(f"node.nccl.env.{name}", name, f"obsolete for EFA ({why}); remove it, gpufleet "
                                    "sets FI_EFA_USE_HUGE_PAGE=0 and the socket interfaces"))
    return problems


def allowed_cpus_exist(selection: Selection, today: date) -> list[Problem]:
    cpus, vcpus = selection.spec.node.isolation.allowed_cpus, selection.instance.vcpus
    if cpus is None:
        return []
    highest = max(int(n) for n in re.split(r"[,-]", cpus))
    if highest >= vcpus:
        return [Problem("node.isolation.allowed_cpus", cpus, f"{selection.instance.name} has CPUs 0-{vcpus - 1}")]
    return []


def dcgm_exporter_has_runtime(selection: Selection, today: date) -> list[Problem]:
    node = selection.spec.node
    if node.exporters.dcgm and node.container_runtime == "none":
        return [Problem("node.exporters.dcgm", True, "dcgm-exporter runs as a container; set `node.container_runtime` "
                        "to docker or containerd, or `node.exporters.dcgm: false`")]
    return []


def drain_command_is_set(selection: Selection, today: date) -> list[Problem]:
    command = selection.spec.node.spot.drain_command
    if not command.strip():
        return [Problem("node.spot.drain_command", command, "expected a shell command, e.g. "
                        "'systemctl kill --signal=SIGTERM gpufleet-jobs.slice'")]
    return []


def node_stack_runs_on_the_machine(selection: Selection, today: date) -> list[Problem]:
    """gpufleet's images and node software are x86_64 ones, and it runs no NVIDIA IMEX, which GPUs sharing one
    NVLink domain across nodes (GB200 NVL72) need: such a node would boot an image of the wrong architecture or
    come up half-configured, so it is refused instead."""
    instance, gpu = selection.instance, selection.gpu
    missing = node_stack_gaps(instance, gpu)
    if not missing:
        return []
    field = "accelerator.instance_type" if selection.spec.accelerator.instance_type else "accelerator.gpu"
    value = selection.spec.accelerator.instance_type or selection.spec.accelerator.gpu
    return [Problem(field, value, f"{instance.name} ({gpu.model}) needs {' and '.join(missing)}, which gpufleet does "
                    "not set up yet; choose an x86_64 type such as an 8-GPU B200 or B300 one")]


NODE_RULES: tuple[Callable[[Selection, date], list[Problem]], ...] = (
    node_stack_runs_on_the_machine,
    driver_branch_is_supported,
    cuda_runs_on_branch,
    cuda_supports_gpu,
    module_flavor_fits_gpu,
    branch_supports_gpu,
    mig_profiles_fit_gpu,
    mps_fits_mig,
    nccl_env_is_safe,
    nccl_env_is_current_for_efa,
    allowed_cpus_exist,
    dcgm_exporter_has_runtime,
    drain_command_is_set,
)


def check_node_software(selection: Selection, today: date | None = None) -> list[Problem]:
    """Every problem with `selection.spec.node` for the selected GPU, in rule order. `today` decides end of life."""
    today = today or date.today()
    return [problem for rule in NODE_RULES for problem in rule(selection, today)]
