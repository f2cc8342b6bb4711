"""What CUDA each GPU architecture needs, and what CUDA/cuDNN each framework release was built for.

Facts are tables with their sources, not branches in code:
- ARCH_MIN_CUDA: the first CUDA toolkit that compiles for the architecture's compute capability (NVIDIA CUDA
  Toolkit release notes; compute capabilities per GPU: developer.nvidia.com/cuda-gpus). A framework built with an
  older CUDA carries no kernels (SASS) for the newer architecture, and its PTX is too old for the driver to JIT, so
  it fails on the first kernel launch ("no kernel image is available for execution on the device").
  Turing sm_75: CUDA 10.0. Ampere sm_80 (A100): 11.0; sm_86 (A10, A10G, RTX 3090): 11.1. Ada sm_89 (L4, L40S):
  11.8. Hopper sm_90 (H100, H200): 11.8. Blackwell sm_100 (B200, GB200): 12.8; sm_120 (RTX PRO 6000): 12.8.
- ARCH_MAX_CUDA_MAJOR: CUDA 13 drops Maxwell, Pascal and Volta (the same fact components/spec/node_rules.py uses).
- TENSORFLOW_BUILD: tensorflow.org/install/source#gpu "Tested build configurations" (Linux GPU rows).
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

# Catalog GPU model -> the compute capability's first CUDA, where it differs from its architecture's entry.
MODEL_MIN_CUDA = {"A10": "11.1", "A10G": "11.1"}
ARCH_MIN_CUDA = {"volta": "9.0", "turing": "10.0", "ampere": "11.0", "ada": "11.8", "hopper": "11.8",
                 "blackwell": "12.8"}
ARCH_MAX_CUDA_MAJOR = {"maxwell": 12, "pascal": 12, "volta": 12}
# Consumer GPUs nvidia-smi may report locally, which no cloud sells: their architecture, for the record.
LOCAL_ONLY_GPUS = {"RTX 3090": ("ampere", "11.1"), "RTX 3080": ("ampere", "11.1"), "RTX 4090": ("ada", "11.8"),
                   "RTX 4080": ("ada", "11.8"), "RTX 2080": ("turing", "10.0"), "RTX A6000": ("ampere", "11.1"),
                   "RTX 6000 Ada": ("ada", "11.8"), "Titan RTX": ("turing", "10.0")}
# TensorFlow minor release -> (CUDA, cuDNN) it was built and tested with.
TENSORFLOW_BUILD = {
    "2.4": ("11.0", "8.0"), "2.5": ("11.2", "8.1"), "2.6": ("11.2", "8.1"), "2.7": ("11.2", "8.1"),
    "2.8": ("11.2", "8.1"), "2.9": ("11.2", "8.1"), "2.10": ("11.2", "8.1"), "2.11": ("11.2", "8.1"),
    "2.12": ("11.8", "8.6"), "2.13": ("11.8", "8.6"), "2.14": ("11.8", "8.7"), "2.15": ("12.2", "8.9"),
    "2.16": ("12.3", "8.9"), "2.17": ("12.3", "8.9"), "2.18": ("12.5", "9.3"),
}


def cuda_from_local_label(label: str | None) -> str | None:
    """`cu113` -> "11.3", `cu121` -> "12.1", `cu128` -> "12.8"; None for `cpu`, `rocm5.6` or anything else."""
    if not label or not label.startswith("cu") or not label[2:].isdigit() or len(label) < 5:
        return None
    digits = label[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def min_cuda(model: str | None, architecture: str | None) -> str | None:
    """The oldest CUDA that runs on this GPU, or None when its architecture is not in the table."""
    return MODEL_MIN_CUDA.get(model or "") or ARCH_MIN_CUDA.get(architecture or "")


def cuda_problem(cuda: str, model: str, architecture: str) -> str | None:
    """Why a framework built with CUDA `cuda` cannot run on this GPU, or None when it can."""
    needed = min_cuda(model, architecture)
    try:
        captured = Version(cuda)
    except InvalidVersion:
        return None
    if needed and captured < Version(needed):
        return f"{model} ({architecture}) needs CUDA {needed} or later"
    ceiling = ARCH_MAX_CUDA_MAJOR.get(architecture)
    if ceiling is not None and captured.major > ceiling:
        return f"{model} ({architecture}) is not supported by CUDA {captured.major}, only up to {ceiling}.x"
    return None


def tensorflow_build(version: str) -> tuple[str, str] | None:
    """(CUDA, cuDNN) of a TensorFlow release, from its minor version."""
    try:
        release = Version(version).release
    except InvalidVersion:
        return None
    return TENSORFLOW_BUILD.get(f"{release[0]}.{release[1]}") if len(release) >= 2 else None
