"""Which catalog types gpufleet's node software can run, and why not: one place for the facts the node rules refuse
a plan on and that `gpufleet catalog` and `gpufleet select` show beside the type's prices.

A type stays in the catalog with its prices whether or not gpufleet can deploy it (users compare clouds and
prices); only a plan of it is refused, with the reason given here.
"""

from __future__ import annotations

from .models import GpuModel, InstanceType

NODE_ARCH = "x86_64"


def node_stack_gaps(instance: InstanceType, gpu: GpuModel | None) -> tuple[str, ...]:
    """What the type needs that gpufleet's images and node software do not set up: another CPU architecture, or
    NVIDIA IMEX for an NVLink domain that spans nodes (GB200 NVL72)."""
    gaps = []
    if instance.arch != NODE_ARCH:
        gaps.append(f"{instance.arch} images and node software (gpufleet's are {NODE_ARCH})")
    if gpu is not None and gpu.nvlink_domain_gpus:
        gaps.append(f"NVIDIA IMEX across the {gpu.nvlink_domain_gpus}-GPU NVLink domain")
    return tuple(gaps)


def refusal(instance: InstanceType, gpu: GpuModel | None) -> str | None:
    """Why gpufleet refuses plans of this type, as a phrase that follows the type's name, or None when it runs."""
    if instance.unsupported_driver:
        return instance.unsupported_driver
    gaps = node_stack_gaps(instance, gpu)
    return f"needs {' and '.join(gaps)}, which gpufleet does not set up yet" if gaps else None


def refusal_reason(refused: str) -> str:
    """`refusal`'s phrase as one of an offer's reasons in `select` ("" for a type that runs)."""
    return f"a plan of it is refused: it {refused}" if refused else ""
