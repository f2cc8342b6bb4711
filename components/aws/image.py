"""The boot image, named by a public SSM parameter that EC2 resolves when each node launches.

`resolve:ssm:` in the launch template means a new AMI release reaches new nodes without a diff in the stack
(a changed image id would create a new launch template version on every `pulumi up`). Pin `image.id` to freeze it.
"""

from __future__ import annotations

from ..spec import ClusterSpec

SSM_IMAGE_PARAMETERS = {
    # AWS Deep Learning Base OSS AMI: NVIDIA driver, CUDA, EFA, aws-ofi-nccl, DCGM, container toolkit preinstalled.
    "driver-ready": "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
    "ubuntu-22.04": "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
    "ubuntu-24.04": "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
}
ROOT_DEVICE = "/dev/sda1"


def image_id(spec: ClusterSpec) -> str:
    """The pinned AMI, or `resolve:ssm:<public parameter>` for the image kind."""
    return spec.image.id or f"resolve:ssm:{SSM_IMAGE_PARAMETERS[spec.image.kind]}"
