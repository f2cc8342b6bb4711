"""Typed catalog rows. GPU and instance facts are data (`data/`), never instance-type tests in code (R8)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

# `gpu_driver` values of instance rows that gpufleet's node software cannot install, and why.
UNSUPPORTED_DRIVERS = {"grid": "needs NVIDIA's GRID (vGPU) driver, which gpufleet does not install",
                       "rocm": "carries AMD GPUs (ROCm driver), which gpufleet's node software does not install"}
# RDMA fabrics an instance type can have. None means TCP only.
FABRICS = ("efa", "infiniband", "tcpx", "tcpxo", "roce")


@dataclass(frozen=True)
class GpuModel:
    """Per-GPU facts shared by every cloud that offers the GPU."""

    model: str
    memory_gib: int
    architecture: str
    bf16_dense_tflops: float | None
    aliases: tuple[str, ...] = ()
    open_modules_required: bool = False
    mig_profiles: tuple[str, ...] = ()
    mig_min_driver: str | None = None
    source: str = ""
    vendor: str = "nvidia"  # "amd": ROCm, not NVIDIA's driver stack (node code must not install CUDA/Fabric Manager)
    # GPUs that share one NVLink domain across nodes (GB200 NVL72: 72 GPUs over 18 nodes); 0 = NVLink stays inside a
    # node. Node code must run NVIDIA IMEX for such a domain, and placement must keep the nodes in one domain.
    nvlink_domain_gpus: int = 0
    # GPUs per node the GPU is sold in by any cloud (HGX boards hold 4 or 8). A row outside this is a data error.
    node_gpu_counts: tuple[int, ...] = (1, 2, 4, 8)


@dataclass(frozen=True)
class InstanceType:
    """One machine shape of one cloud, with what gpufleet needs to lay out its network and node software."""

    cloud: str
    name: str
    gpu: str
    gpus: int
    gpu_memory_gib: int
    vcpus: int
    memory_gib: float
    fabric: str | None
    network_gbps: float
    nvswitch: bool
    source: str
    arch: str = "x86_64"
    # AWS: network cards, EFA interfaces AWS allows, and whether card 0 can carry EFA.
    network_cards: int = 1
    efa_interfaces: int = 0
    primary_card_efa: bool = False
    # Azure: InfiniBand rate per GPU link. GCP: extra GPU NICs and their MTU.
    infiniband_gbps: int = 0
    gpu_nics: int = 0
    gpu_nic_mtu: int = 0
    network_burst: bool = False  # network_gbps is an "up to" burst rate, not a baseline
    # A vGPU slice: the share of one GPU the hypervisor gives this type (0.125 = 1/8), with `gpus` 1 and
    # `gpu_memory_gib` the slice's own frame buffer. 1.0 = whole GPUs.
    gpu_fraction: float = 1.0
    unverified: str = ""  # which facts of this row are not yet confirmed from the cloud's API
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def needs_grid_driver(self) -> bool:
        """Sizes that run only NVIDIA's GRID (vGPU) driver, which gpufleet does not install (Azure NVadsA10_v5)."""
        return self.extra.get("gpu_driver") == "grid"

    @property
    def unsupported_driver(self) -> str | None:
        """Why gpufleet's node software cannot drive this type's GPUs, or None: it installs NVIDIA's datacenter
        driver, and the GRID (vGPU guest) driver on vGPU slices only (not on the whole-GPU GRID sizes, not AMD's
        ROCm)."""
        if self.is_vgpu_slice and self.needs_grid_driver:
            return None
        return UNSUPPORTED_DRIVERS.get(self.extra.get("gpu_driver", "nvidia"))

    @property
    def is_vgpu_slice(self) -> bool:
        """A fractional type: the hypervisor gives the VM a slice of one GPU (no MIG, NVLink, P2P or RDMA)."""
        return self.gpu_fraction < 1

    @property
    def fraction_label(self) -> str:
        """"1/8" for a slice, "" for whole GPUs."""
        return f"1/{round(1 / self.gpu_fraction)}" if self.is_vgpu_slice else ""

    @property
    def on_demand_needs_reservation(self) -> bool:
        """Types the cloud does not sell on demand (`on_demand: reservation` in the row): standard capacity comes
        only from a reservation, besides Spot (GCP A4X, A4, A3 Ultra: future reservations, consumed by
        reservation-bound VMs). An on-demand cluster of these without a reservation could never start."""
        return self.extra.get("on_demand") == "reservation"

    @property
    def capacity_blocks_only(self) -> bool:
        """Types sold only through capacity blocks (`capacity_blocks_only: true`: AWS p6e-gb200, inside UltraServers):
        neither on demand nor on Spot can such a node ever start."""
        return bool(self.extra.get("capacity_blocks_only"))

    @property
    def rdma_devices(self) -> int:
        """RDMA devices the node should expose: EFA interfaces, IB links or GPU NICs."""
        return {"efa": self.efa_interfaces, "infiniband": self.gpus if self.infiniband_gbps else 0}.get(
            self.fabric or "", self.gpu_nics)


@dataclass(frozen=True)
class Price:
    """USD per node-hour in one region, or one zone where spot is priced per zone."""

    cloud: str
    instance_type: str
    region: str
    zone: str  # "" for a region-wide price
    on_demand: float | None
    spot: float | None
    reserved_1y: float | None = None
    reserved_3y: float | None = None
    source: str = ""  # key into the cloud's price sources; "" = the file's default source


@dataclass(frozen=True)
class PriceSource:
    """Where a cloud's prices came from and when.

    `snapshot_date` is None when the source does not record its date (SkyPilot's catalog files carry none); then
    `not_before` is the earliest date its content allows, where one is known (for example a price cut the rows
    reflect). Ages are counted from `earliest`, so an undated snapshot is never reported fresher than it can be.
    """

    cloud: str
    source: str
    snapshot_date: date | None
    notes: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()  # rows refused with the reason, e.g. "Standard_ND96isr_H100_v5 eastus: ..."
    key: str = ""  # "" for the file's default source, else the `sources:` key that rows name
    not_before: date | None = None

    @property
    def earliest(self) -> date | None:
        """The date the prices are from, or the earliest they can be from; None when nothing is known."""
        return self.snapshot_date or self.not_before

    @property
    def age_basis(self) -> date:
        """What ages are counted from, for ordering sources: a source with no known date counts as the oldest."""
        return self.earliest or date.min

    def age_days(self, today: date) -> int | None:
        """Days from `earliest` to `today` (an undated source's age is at most this); None when nothing is known."""
        return None if self.earliest is None else (today - self.earliest).days

    @property
    def date_label(self) -> str:
        """"2026-01-21", "undated, not before 2025-06-05" or "undated"."""
        if self.snapshot_date:
            return self.snapshot_date.isoformat()
        return f"undated, not before {self.not_before.isoformat()}" if self.not_before else "undated"


# What a flag takes out of selection: the whole instance type or row, or one market's price.
FLAG_SCOPES = ("row", "on_demand", "spot", "reserved_1y", "reserved_3y")


@dataclass(frozen=True)
class Flag:
    """A catalog row the sanity checks refused: excluded from selection, shown with its reason.

    `region` and `zone` are "" when the flag covers every region or zone of the instance type.
    """

    cloud: str
    instance_type: str
    region: str
    zone: str
    scope: str  # one of FLAG_SCOPES
    kind: str  # e.g. "gpu-count", "spot-above-on-demand", "on-demand-outlier"
    reason: str

    def covers(self, price: Price) -> bool:
        return (price.cloud, price.instance_type) == (self.cloud, self.instance_type) and \
            self.region in ("", price.region) and self.zone in ("", price.zone)

    def where(self) -> str:
        return " ".join(part for part in (self.cloud, self.instance_type, self.region, self.zone) if part)
