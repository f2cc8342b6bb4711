"""Node boot configuration: maps a validated spec and its catalog row into `cloud_init.BootConfig`.

Data flows one way: spec -> selector -> cloud component -> here -> cloud_init. `cloud_init` never imports
`components`; `gpufleet.pipeline.plan_cluster` calls `user_data_for`, checks the size once and encodes it for each cloud.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet.cloud_init import BootConfig, IsolationConfig, MpsConfig, render_cloud_config
from gpufleet.cloud_init.config import DCGM_EXPORTER_IMAGE, VgpuDriverConfig

from .bench.expected import node_expectation
from .catalog.vgpu_drivers import vgpu_drivers
from .deploytime.containers import Pin, deferred_digest
from .scheduler.conf import slurm_node_config
from .serving import serving_drain_command, triton_config
from .spec.node_rules import min_driver_branch
from .storage.boot import storage_boot_fields

if TYPE_CHECKING:
    from .catalog.selector import Selection

# Kernel-module flavor for `driver.flavor: auto`: open modules from Ampere on (NVIDIA's default since R560, and
# required on Blackwell); proprietary on Turing and older, where clouds keep it (EKS forces it on g4dn for GSP).
PROPRIETARY_ARCHITECTURES = frozenset({"maxwell", "pascal", "volta", "turing"})
# NVSwitch generations that pair Fabric Manager with the NVLink Subnet Manager: 4th-generation NVSwitch (HGX
# B200/B300, GB200 NVL), per NVIDIA's Fabric Manager user guide. Hopper's HGX H100/H200 (3rd gen) runs without it.
NVLSM_ARCHITECTURES = frozenset({"blackwell"})
# Azure ND topology files shipped in the Azure HPC images (azhpc-images ndv4.sh / ndv5.sh), by GPU architecture,
# used when the catalog row has no `extra.nccl_topo_file`.
AZURE_TOPO_FILES = {"ampere": "/opt/microsoft/ndv4-topo.xml", "hopper": "/opt/microsoft/ndv5-topo.xml"}
# Catalog fabrics whose transport the node stack starts only where the spec accepts what it needs (GCP A3:
# gpufleet.gcp.gpudirect); otherwise such nodes keep their GPU NICs and run NCCL's socket transport over all of them
# ("tcp-multinic").
NODE_TCP_FABRICS = frozenset({"tcpx", "tcpxo"})
MULTI_NIC_TCP = "tcp-multinic"


def node_fabric(selection: Selection) -> str | None:
    """The fabric the node configures: the selection's, except GPUDirect transports the node does not start, which
    become multi-NIC TCP over the same NICs."""
    if selection.fabric not in NODE_TCP_FABRICS:
        return selection.fabric
    from .gcp.gpudirect.delivery import tcpxo_delivered  # here, not at the top: only GCP plans load gpufleet.gcp
    return selection.fabric if tcpxo_delivered(selection) else MULTI_NIC_TCP


def gpudirect_boot(selection: Selection, pin: Pin):
    """GPUDirect-TCPXO's node config (`cloud_init.GpuDirectConfig`), None on every other node."""
    if selection.fabric not in NODE_TCP_FABRICS:
        return None
    from .gcp.gpudirect.node import gpudirect_config
    return gpudirect_config(selection, pin)


def driver_flavor(selection: Selection) -> str:
    """The kernel-module flavor the node installs: the spec's choice, or the architecture's default."""
    chosen = selection.spec.node.driver.flavor
    if chosen != "auto":
        return chosen
    gpu = selection.gpu
    if gpu.open_modules_required or gpu.architecture not in PROPRIETARY_ARCHITECTURES:
        return "open"
    return "proprietary"


def nccl_topo_file(selection: Selection) -> str | None:
    if selection.fabric != "infiniband":
        return None
    return selection.instance.extra.get("nccl_topo_file") or AZURE_TOPO_FILES.get(selection.gpu.architecture)


def aws_lifecycle_hook(spec) -> str:
    """The termination hook the node's watcher completes once drained (every AWS group declares it; aws/fleet.py)."""
    if spec.cloud != "aws":
        return ""  # before the import: an Azure or GCP plan must not load gpufleet.aws and the AWS provider SDK
    from .aws.capacity import DRAIN_HOOK_NAME  # here, not at the top: gpufleet.aws imports this module
    return DRAIN_HOOK_NAME


def performance_expectation(selection: Selection) -> str | None:
    """node.health.performance: the figures this node type must reach (components/bench), None when it is off."""
    performance = selection.spec.node.health.performance
    if not performance.enabled:
        return None
    instance = selection.instance
    return node_expectation(instance.cloud, instance.name, selection.gpu.model, performance.tolerance)


def boot_config(selection: Selection, cluster_name: str, pin: Pin = deferred_digest,
                group: str | None = None) -> BootConfig:
    """Everything the node stack needs, resolved from the spec and the catalog. `pin` maps each container image the
    node runs to its reference by digest: the registry's answer at deploy time (`registry_digest`, which the cloud
    components ask for), or the offline stand-in (the default). `group`: the node group's name (None for a spec
    without `node_groups`), which its Slurm nodes carry as a feature."""
    spec, instance, gpu, node = selection.spec, selection.instance, selection.gpu, selection.spec.node
    iso = node.isolation
    nic_names = instance.extra.get("nic_names") or {}
    return BootConfig(
        cloud=spec.cloud,
        cluster_name=cluster_name,
        instance_type=instance.name,
        image_kind=spec.image.kind,
        gpu_model=gpu.model,
        gpus=instance.gpus,
        gpu_memory_gib=instance.gpu_memory_gib,
        gpu_architecture=gpu.architecture,
        driver_branch=node.driver.branch,
        driver_flavor=driver_flavor(selection),
        cuda=node.cuda,
        min_driver_branch=min_driver_branch(node.cuda),
        nvswitch=instance.nvswitch,
        nvlink_subnet_manager=instance.nvswitch and gpu.architecture in NVLSM_ARCHITECTURES,
        fabric=node_fabric(selection) or "tcp",
        rdma_devices=instance.rdma_devices if node_fabric(selection) else 0,  # multi-NIC TCP: its GPU NICs
        arch=instance.arch,
        container_runtime=node.container_runtime,
        isolation=IsolationConfig(iso.memory_max_percent, iso.cpu_quota_percent, iso.allowed_cpus) if iso.enabled else None,
        mps=MpsConfig(node.mps.active_thread_percentage) if node.mps.enabled else None,
        mig_profiles=tuple(node.mig.profiles),
        nccl_debug=node.nccl.debug,
        nccl_env=tuple(node.nccl.env.items()),
        nccl_topo_file=nccl_topo_file(selection),
        host_nics=tuple(nic_names.get("host", ())),
        gpu_nics=tuple(nic_names.get("gpu", ())),
        dcgm_exporter=node.exporters.dcgm,
        dcgm_exporter_image=pin(DCGM_EXPORTER_IMAGE) if node.exporters.dcgm else DCGM_EXPORTER_IMAGE,
        node_exporter=node.exporters.node,
        health_dcgm_diag=node.health.dcgm_diag,
        health_nccl_allreduce=node.health.nccl_allreduce,
        health_performance=performance_expectation(selection),
        # The watcher runs on every node, whatever the market, so every way a node leaves can drain it first: spot
        # notices; AWS's termination hook (scale-in, repair, instance refresh, a Capacity Block's end); GCP host
        # maintenance (GPU VMs cannot live-migrate); Azure's Terminate notice (scale-in, delete, automatic repair);
        # and, with no notice at all, the drain at shutdown. AWS user data over 16 KB goes through S3.
        spot_watcher=True,
        drain_command=serving_drain_command(selection) or node.spot.drain_command,
        drain_on_rebalance=node.spot.drain_on_rebalance,
        aws_lifecycle_hook=aws_lifecycle_hook(spec),
        **storage_boot_fields(spec),
        triton=triton_config(selection, pin),
        slurm=slurm_node_config(selection, cluster_name, group),
        vgpu=vgpu_driver_config(selection),
        gpudirect=gpudirect_boot(selection, pin),
    )


def vgpu_driver_config(selection: Selection) -> VgpuDriverConfig | None:
    """A vGPU slice's GRID driver source (catalog data/vgpu_drivers.yaml) and its slice memory; None for whole GPUs."""
    instance = selection.instance
    if not instance.is_vgpu_slice:
        return None
    driver = vgpu_drivers()[instance.cloud]
    return VgpuDriverConfig(kind=driver.kind, version=driver.version, slice_memory_mib=instance.gpu_memory_gib * 1024,
                            bucket=driver.bucket, bucket_region=driver.bucket_region, prefix=driver.prefix,
                            file_pattern=driver.file_pattern, url=driver.url_for(selection.spec.region),
                            sha256=selection.spec.node.driver.grid_sha256 or "",
                            published_sha256=driver.published_sha256)


def user_data_for(selection: Selection, cluster_name: str, pin: Pin = deferred_digest,
                  group: str | None = None) -> str:
    """The node's cloud-config text ("#cloud-config ..."); deterministic for a given spec, catalog and registry
    answer. Its size is checked once, against the cloud's limit, by `gpufleet.pipeline.plan_cluster`."""
    return render_cloud_config(boot_config(selection, cluster_name, pin, group))
