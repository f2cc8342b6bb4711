"""The boot image: the newest image of a family, resolved once per `pulumi up` and pinned in the template.

Pinned (the default, `image.track: pinned`): the template names the exact image the family pointed to at deploy
time, so every node the group creates until the next `up` (repairs, preemption recreations, scale-out) boots the
same image, and the plan shows which. `image.track: latest` puts the family itself in the template (Compute Engine
resolves it whenever a node is created). `image.id` pins an exact image or family.

Default ("driver-ready"): Canonical's Ubuntu accelerator images (`ubuntu-os-accelerator-images`, family
`ubuntu-accelerator-2404-amd64-with-nvidia-<branch>`), Ubuntu 24.04 with the NVIDIA server driver of the spec's
branch, signed for Secure Boot. Stock Ubuntu: `ubuntu-os-cloud` families. Ubuntu images on GCE ship cloud-init,
whose GCE datasource reads the `user-data` metadata key.

Images that would silently ignore `user-data` are refused, not patched with a startup script: Google's Debian images
(and the Debian-based Deep Learning VM families) do not ship cloud-init (Google asked Debian image builders not to
add it, bootstrap-vz#469), and RHEL-family, SUSE, COS and Windows images are not what the node software targets
(Ubuntu 22.04 / 24.04, apt). A Deep Learning VM image is accepted only from an Ubuntu family. An image from another
project (your own) is accepted with a warning: gpufleet cannot check that it is Ubuntu with cloud-init.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from ..spec import ClusterSpec
from ..spec.errors import Problem

ACCELERATOR_FAMILY = "projects/ubuntu-os-accelerator-images/global/images/family/ubuntu-accelerator-2404-amd64-with-nvidia-{branch}"
# Branches with an `ubuntu-accelerator-2404-amd64-with-nvidia-<branch>` family seen in public use (2025-2026).
ACCELERATOR_BRANCHES = ("570", "580", "595")
STOCK_FAMILIES = {
    "ubuntu-22.04": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts",
    "ubuntu-24.04": "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
}
UBUNTU_PROJECTS = ("ubuntu-os-cloud", "ubuntu-os-accelerator-images", "ubuntu-os-pro-cloud")
DLVM_PROJECT = "deeplearning-platform-release"
# Public image projects whose images do not run cloud-init or are not Ubuntu.
NOT_UBUNTU_PROJECTS = ("debian-cloud", "cos-cloud", "centos-cloud", "rocky-linux-cloud", "rhel-cloud",
                       "rhel-sap-cloud", "suse-cloud", "suse-sap-cloud", "opensuse-cloud", "oracle-linux-cloud",
                       "almalinux-cloud", "fedora-coreos-cloud", "windows-cloud", "windows-sql-cloud")
IMAGE_LINK = re.compile(r"^(?:https://(?:www|compute)\.googleapis\.com/compute/(?:v1|beta)/)?"
                        r"projects/(?P<project>[a-z][-a-z0-9.:]*)/global/images/(?P<rest>(?:family/)?[a-z][-a-z0-9]*)$")


@dataclass(frozen=True)
class BootImage:
    source: str
    shielded: bool  # Secure Boot + vTPM + integrity monitoring: the image is known to support Shielded VM
    warning: str | None = None


FAMILY_LINK = re.compile(r"^projects/(?P<project>[^/]+)/global/images/family/(?P<family>[^/]+)$")


def pinned_source(image: BootImage, spec: ClusterSpec, opts: pulumi.InvokeOutputOptions) -> pulumi.Input[str]:
    """The exact image the default family names now, or the template source as given (pinned id, `track: latest`)."""
    family = FAMILY_LINK.match(image.source)
    if spec.image.id is not None or spec.image.track == "latest" or family is None:
        return image.source
    return gcp.compute.get_image_output(family=family["family"], project=family["project"], opts=opts).self_link


def boot_image(spec: ClusterSpec) -> BootImage:
    """The image (or family) the nodes boot; call `image_problems` first."""
    if spec.image.id is None:
        if spec.image.kind == "driver-ready":
            return BootImage(ACCELERATOR_FAMILY.format(branch=spec.node.driver.branch), shielded=True)
        return BootImage(STOCK_FAMILIES[spec.image.kind], shielded=True)
    match = IMAGE_LINK.match(spec.image.id)
    project = match["project"] if match else ""
    if project in UBUNTU_PROJECTS or project == DLVM_PROJECT:
        return BootImage(spec.image.id, shielded=True)
    return BootImage(spec.image.id, shielded=False,
                     warning=f"image {spec.image.id!r} is from project {project!r}: gpufleet cannot check that it is "
                             "Ubuntu 22.04/24.04 with cloud-init (without it the node ignores `user-data`); Shielded "
                             "VM is left to the image's defaults")


def image_problems(spec: ClusterSpec) -> list[Problem]:
    """A pinned image that is not a self link, or one that would ignore the node's cloud-init user data."""
    image_id = spec.image.id
    if image_id is None:
        branch = spec.node.driver.branch
        if spec.image.kind == "driver-ready" and branch not in ACCELERATOR_BRANCHES:
            return [Problem("node.driver.branch", branch, "GCP's driver-ready Ubuntu accelerator images come with "
                            f"driver branch {', '.join(ACCELERATOR_BRANCHES)}; pick one of them, or use "
                            "`image.kind: ubuntu-24.04` to install this branch, or pin `image.id`")]
        return []
    match = IMAGE_LINK.match(image_id)
    if match is None:
        return [Problem("image.id", image_id, "expected an image self link: projects/<project>/global/images/<name> "
                        "or projects/<project>/global/images/family/<family>")]
    project, rest = match["project"], match["rest"]
    if project in NOT_UBUNTU_PROJECTS:
        return [Problem("image.id", image_id, f"images from {project!r} do not run cloud-init or are not Ubuntu, so "
                        "the node would ignore its `user-data`; use an Ubuntu 22.04/24.04 image (ubuntu-os-cloud, "
                        "ubuntu-os-accelerator-images) or drop `image.id` for the default")]
    if project == DLVM_PROJECT and "ubuntu" not in rest:
        return [Problem("image.id", image_id, "this Deep Learning VM family is Debian-based and does not run "
                        "cloud-init, so the node would ignore its `user-data`; use a DLVM Ubuntu family (e.g. "
                        "common-cu128-ubuntu-2204-nvidia-570) or drop `image.id` for the default")]
    return []
