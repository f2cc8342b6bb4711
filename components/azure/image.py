"""The boot image: Azure's HPC image (NVIDIA driver, CUDA, DOCA/OFED, HPC-X, NCCL with the RDMA SHARP plugin and the
ND topology files) by default, stock Ubuntu for the `ubuntu-*` kinds, or the image `image.id` pins.

Marketplace URNs from Azure/azhpc-images README (shared/reference/networking-aws-azure-gcp.md 2.4): the HPC image is
`microsoft-dsvm:ubuntu-hpc:2204:latest` (2404 also exists: pin it with `image.id:
microsoft-dsvm:ubuntu-hpc:2404:latest`). All ND and NC sizes here are Generation 2 VMs, and these SKUs are Gen2.
`latest` is resolved when `pulumi up` runs and the scale-set model names that version (`image_version.py`), so every
node created until the next `up` boots the same release; `image.track: latest` keeps `latest` in the model (Azure
resolves it whenever it creates a VM) and the plan warns; `image.id` with an exact version pins it yourself.
"""

from __future__ import annotations

import re

from ..spec import ClusterSpec, Problem

IMAGES = {
    "driver-ready": {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"},
    "ubuntu-22.04": {"publisher": "Canonical", "offer": "0001-com-ubuntu-server-jammy", "sku": "22_04-lts-gen2",
                     "version": "latest"},
    "ubuntu-24.04": {"publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "server", "version": "latest"},
}
# A Slurm cluster's driver-ready image: the Ubuntu 24.04 HPC image, whose archive has Slurm 23.11 (dynamic nodes).
SLURM_DRIVER_READY = {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2404", "version": "latest"}
URN = re.compile(r"^(?P<publisher>[\w.-]+):(?P<offer>[\w.-]+):(?P<sku>[\w.-]+):(?P<version>[\w.-]+)$")
RESOURCE_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute/"
                         r"(images/[^/]+|galleries/[^/]+/images/[^/]+(/versions/[^/]+)?)$", re.IGNORECASE)


def image_problems(spec: ClusterSpec) -> list[Problem]:
    image_id = spec.image.id
    if image_id is None or URN.match(image_id) or RESOURCE_ID.match(image_id):
        return []
    return [Problem("image.id", image_id, "expected a marketplace URN `publisher:offer:sku:version` (e.g. "
                    "`microsoft-dsvm:ubuntu-hpc:2404:latest`) or an image or gallery image resource id "
                    "`/subscriptions/.../providers/Microsoft.Compute/...`")]


def image_reference(spec: ClusterSpec) -> dict[str, str]:
    """ImageReference fields (snake_case), for `image_problems`-clean specs."""
    image_id = spec.image.id
    if image_id is None:
        return dict(default_image(spec))
    urn = URN.match(image_id)
    return urn.groupdict() if urn else {"id": image_id}


def default_image(spec: ClusterSpec) -> dict[str, str]:
    if spec.scheduler.kind == "slurm" and spec.image.kind == "driver-ready":
        return SLURM_DRIVER_READY
    return IMAGES[spec.image.kind]


def floating_image_warning(spec: ClusterSpec) -> list[str]:
    """A marketplace image left at `latest` by `image.track: latest` floats (see the module docstring)."""
    reference = image_reference(spec)
    if spec.image.track != "latest" or reference.get("version") != "latest":
        return []
    return [f"the {reference['offer']} image is `latest` (`image.track: latest`): nodes created later (repairs, spot "
            "restores, scale-out) may boot a newer release than the running ones; drop `image.track` to pin the "
            "version `pulumi up` finds, or pin one with `image.id: "
            f"{reference['publisher']}:{reference['offer']}:{reference['sku']}:<version>` (list them with `az vm image "
            f"list --all -p {reference['publisher']} -f {reference['offer']} -s {reference['sku']} -l {spec.region}`)"]
