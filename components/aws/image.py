"""The boot image: an AMI resolved from AWS's public SSM parameter once per `pulumi up`, and pinned.

Pinned (the default, `image.track: pinned`): the launch template names the concrete AMI id the parameter held at
deploy time, so every node launched until the next `up` (spot replacements, repairs, scale-out) boots the same
driver, EFA stack and NCCL plugin as the rest of the cluster, and the plan shows which AMI. A newer AMI reaches
nodes only through a later `up`, and then only new nodes, or all of them with `rollout.enabled`.
`image.track: latest` keeps `resolve:ssm:` in the template (EC2 resolves it at every launch). `image.id` pins
an exact AMI.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ..spec import ClusterSpec

SSM_IMAGE_PARAMETERS = {
    # AWS Deep Learning Base OSS AMI: NVIDIA driver, CUDA, EFA, aws-ofi-nccl, DCGM, container toolkit preinstalled.
    "driver-ready": "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
    "ubuntu-22.04": "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
    "ubuntu-24.04": "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
}
# A Slurm cluster's driver-ready image: the same AMI on Ubuntu 24.04, whose archive has Slurm 23.11 (dynamic nodes);
# Ubuntu 22.04's 21.08 has none (gpufleet.spec.scheduler_rules).
SLURM_DRIVER_READY_PARAMETER = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id"
ROOT_DEVICE = "/dev/sda1"


def image_parameter(spec: ClusterSpec) -> str:
    if spec.scheduler.kind == "slurm" and spec.image.kind == "driver-ready":
        return SLURM_DRIVER_READY_PARAMETER
    return SSM_IMAGE_PARAMETERS[spec.image.kind]


def image_id(spec: ClusterSpec, opts: pulumi.InvokeOptions | None = None,
             pinned: pulumi.Input[str] | None = None) -> pulumi.Input[str]:
    """The pinned AMI id (`pinned`: `image.id` as given, possibly another resource's output), the AMI the image
    kind's public parameter names now, or `resolve:ssm:` when tracking."""
    if pinned is not None:
        return pinned
    if spec.image.track == "latest":
        return f"resolve:ssm:{image_parameter(spec)}"
    return aws.ssm.get_parameter_output(name=image_parameter(spec), region=spec.region, opts=opts).value
