"""Plan-time rules for vGPU slices (AWS G6f/Gr6f, Azure NVadsA10 v5 partial sizes, GCP G4 fractional sizes).

The hypervisor gives each VM its own slice of one GPU, with its own frame buffer, run by NVIDIA's GRID (vGPU guest)
driver. A slice has no MIG, no NVLink or peer-to-peer, no RDMA fabric and shares its host with other tenants' VMs,
so each of those asks is refused at its field with what would work instead, before anything is declared. The
selector runs these ahead of the node software rules and drops their generic message on the same field.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import TYPE_CHECKING

from .errors import Problem

if TYPE_CHECKING:
    from ..catalog.selection import Selection

# `node.nccl.env` names that only matter between nodes or between GPUs of one node (network transports, their
# plugins, peer-to-peer and NVLink): a slice has one share of one GPU, no RDMA device and no P2P path.
MULTI_NODE_NCCL_PREFIXES = ("NCCL_IB_", "NCCL_NET", "NCCL_SOCKET_", "NCCL_CROSS_NIC", "NCCL_COLLNET", "NCCL_NVLS",
                            "NCCL_P2P_", "NCCL_SHM_", "NCCL_GDR", "FI_", "OFI_NCCL_", "UCX_")
RDMA_FABRICS = ("efa", "infiniband", "gpudirect")
# Each cloud's word for the placement a slice cannot use, and the spec fields that ask for it.
PLACEMENT = {"aws": "a cluster placement group", "azure": "a proximity placement group",
             "gcp": "a compact placement policy"}


def _slice(selection: Selection) -> str:
    instance = selection.instance
    return f"{instance.name} is a vGPU slice ({instance.fraction_label} of an {instance.gpu})"


def no_mig_on_a_slice(selection: Selection, today: date) -> list[Problem]:
    profiles = selection.spec.node.mig.profiles
    if not profiles:
        return []
    return [Problem("node.mig.profiles", profiles, f"{_slice(selection)}: the hypervisor already partitions the GPU "
                    "and the vGPU guest driver has no MIG; drop `node.mig.profiles`, or choose a whole-GPU type with "
                    "MIG (A100, H100, ...)")]


def no_mps_on_a_slice(selection: Selection, today: date) -> list[Problem]:
    if not selection.spec.node.mps.enabled:
        return []
    return [Problem("node.mps.enabled", True, f"{_slice(selection)}: MPS would share it between processes without "
                    "memory isolation, across whoever runs on the node; give each tenant its own slice instead and "
                    "set `node.mps.enabled: false`")]


def no_rdma_fabric_on_a_slice(selection: Selection, today: date) -> list[Problem]:
    fabric = selection.spec.fabric
    if fabric not in RDMA_FABRICS:
        return []
    return [Problem("fabric", fabric, f"{_slice(selection)}: slices have no RDMA fabric (no EFA, InfiniBand or "
                    "GPUDirect); use `fabric: auto` or `tcp`, or a whole-GPU type with that fabric")]


def no_multi_node_nccl_on_a_slice(selection: Selection, today: date) -> list[Problem]:
    node = selection.spec.node
    problems = [Problem(f"node.nccl.env.{name}", value, f"{_slice(selection)}: it has one share of one GPU, no "
                        "RDMA device and no peer-to-peer path, so NCCL network, P2P and NVLink settings do not "
                        "apply; drop it")
                for name, value in sorted(node.nccl.env.items()) if name.startswith(MULTI_NODE_NCCL_PREFIXES)]
    if node.health.nccl_allreduce:
        problems.append(Problem("node.health.nccl_allreduce", True, f"{_slice(selection)}: there is one GPU share "
                                "per node and nothing to all-reduce between; set it to false"))
    return problems


def no_placement_group_for_a_slice(selection: Selection, today: date) -> list[Problem]:
    spec = selection.spec
    asked = [(path, value) for path, value in (("placement_group", spec.placement_group),
                                               ("placement_group_name", spec.placement_group_name),
                                               ("placement_max_distance", spec.placement_max_distance))
             if value not in (None, False)]
    return [Problem(path, value, f"{_slice(selection)}: it shares its host's GPU with other tenants' VMs, and "
                    f"gpufleet does not put slices in {PLACEMENT[spec.cloud]}; drop `{path}`")
            for path, value in asked]


def no_datacenter_driver_on_a_slice(selection: Selection, today: date) -> list[Problem]:
    kind = selection.spec.image.kind
    if kind != "driver-ready":
        return []
    return [Problem("image.kind", kind, f"{_slice(selection)}: the driver-ready images carry NVIDIA's datacenter "
                    "driver, which does not run on a vGPU slice; use `image.kind: ubuntu-22.04` or `ubuntu-24.04`, "
                    "and gpufleet installs the GRID guest driver the cloud names for it")]


def grid_driver_can_be_verified(selection: Selection, today: date) -> list[Problem]:
    """A cloud that publishes no checksum for its GRID driver (Azure) needs the spec to pin one: the node never runs
    a driver it cannot check."""
    from ..catalog.vgpu_drivers import vgpu_drivers
    driver = vgpu_drivers()[selection.spec.cloud]
    if not driver.needs_pinned_checksum or selection.spec.node.driver.grid_sha256:
        return []
    file = driver.url.rsplit("/", 1)[-1]
    return [Problem("node.driver.grid_sha256", None, f"required for {selection.instance.name}: {selection.spec.cloud} "
                    f"publishes no checksum for the GRID driver it names ({file}), and a node runs no driver it "
                    f"cannot verify; give the file's SHA-256 (`sha256sum {file}` on a copy you trust)")]


VGPU_RULES: tuple[Callable[[Selection, date], list[Problem]], ...] = (
    no_datacenter_driver_on_a_slice,
    no_mig_on_a_slice,
    no_mps_on_a_slice,
    no_rdma_fabric_on_a_slice,
    no_multi_node_nccl_on_a_slice,
    no_placement_group_for_a_slice,
    grid_driver_can_be_verified,
)


def check_vgpu_slice(selection: Selection, today: date | None = None) -> list[Problem]:
    """Every problem of asking a vGPU slice for what only a whole GPU has; for whole-GPU types, a GRID pin."""
    if not selection.instance.is_vgpu_slice:
        pin = selection.spec.node.driver.grid_sha256
        return [Problem("node.driver.grid_sha256", pin, f"{selection.instance.name} takes NVIDIA's datacenter driver; "
                        "the GRID pin applies to vGPU slices only: drop it")] if pin else []
    today = today or date.today()
    return [problem for rule in VGPU_RULES for problem in rule(selection, today)]
