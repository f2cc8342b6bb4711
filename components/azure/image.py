"""The boot image: Azure's HPC image (NVIDIA driver, CUDA, DOCA/OFED, HPC-X, NCCL with the RDMA SHARP plugin and the
ND topology files) by default, stock Ubuntu for the `ubuntu-*` kinds, or the image `image.id` pins.

Marketplace URNs from Azure/azhpc-images README (shared/reference/networking-aws-azure-gcp.md 2.4): the HPC image is
`microsoft-dsvm:ubuntu-hpc:2204:latest` (2404 also exists: pin it with `image.id:
microsoft-dsvm:ubuntu-hpc:2404:latest`). All ND and NC sizes here are Generation 2 VMs, and these SKUs are Gen2.
`latest` resolves when each VM is created, so nodes added later may boot a newer release; pin a version in
`image.id` to freeze it. gpufleet cannot pin it for you at deploy time as it does on AWS and GCP: azure-native has
no function that lists marketplace image versions (Azure's VirtualMachineImages List API is not exposed), so an
unpinned Azure plan says so in a warning, with the command that lists the versions.
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
    """The default marketplace images float on Azure (see the module docstring); `image.track: latest` says so."""
    if spec.image.id is not None or spec.image.track == "latest":
        return []
    image = default_image(spec)
    return [f"the {image['offer']} image is `latest`: nodes created later (repairs, spot restores, scale-out) may "
            "boot a newer release than the running ones; pin one with `image.id: "
            f"{image['publisher']}:{image['offer']}:{image['sku']}:<version>` (list them with `az vm image list "
            f"--all -p {image['publisher']} -f {image['offer']} -s {image['sku']} -l {spec.region}`)"]
