"""Which Triton container releases run on which NVIDIA driver branches.

Source: NVIDIA's Triton Inference Server release notes, "Driver Requirements" of each release
(docs.nvidia.com/deeplearning/triton-inference-server/release-notes/rel-YY-MM.html), also summarised in the Deep
Learning Frameworks Support Matrix. Each release needs a native driver branch at or above `native_min`; on data
center GPUs (every GPU gpufleet deploys) the CUDA forward-compatibility package in the container also lets it run on
the listed older branches. Add a row only from those notes. (The 25.x notes list R545 as forward-compatible and
also tell R545 users to upgrade; the row keeps what the notes list. Driver branches gpufleet installs are refused
separately when past NVIDIA's end of life.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TritonRelease:
    cuda: str
    native_min: int
    """The release notes' "requires NVIDIA Driver release N or later"."""
    forward_compatible: tuple[int, ...]
    """Older data-center branches the notes list as usable through forward compatibility."""
    source: str
    oldest_architecture: str = "turing"
    """The notes' "GPU Requirements": 23.x supports compute capability 6.0+ (Pascal on), 25.x 7.5+ (Turing on)."""


# GPU architectures by compute capability, oldest first.
ARCHITECTURES = ("pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")


def supports_architecture(version: str, architecture: str) -> bool:
    oldest = TRITON_RELEASES[version].oldest_architecture
    return architecture not in ARCHITECTURES or ARCHITECTURES.index(architecture) >= ARCHITECTURES.index(oldest)


def _notes(version: str) -> str:
    return ("https://docs.nvidia.com/deeplearning/triton-inference-server/release-notes/"
            f"rel-{version.replace('.', '-')}.html")


TRITON_RELEASES = {
    "23.08": TritonRelease("12.2.1", 535, (450, 470, 510, 525), _notes("23.08"), "pascal"),
    "23.12": TritonRelease("12.3.2", 545, (450, 470, 510, 525, 535), _notes("23.12"), "pascal"),
    "25.03": TritonRelease("12.8.1", 560, (470, 525, 535, 545), _notes("25.03")),
    "25.08": TritonRelease("13.0.0", 575, (470, 525, 535, 545), _notes("25.08")),
    "25.10": TritonRelease("13.0.2", 575, (470, 525, 535, 545), _notes("25.10")),
}


def triton_image(version: str, digest: str | None = None) -> str:
    """The NGC image reference: by digest when given, else by tag."""
    base = f"nvcr.io/nvidia/tritonserver:{version}-py3"
    return f"{base}@{digest}" if digest else base


def runs_on_branch(version: str, branch: int) -> bool:
    release = TRITON_RELEASES[version]
    return branch >= release.native_min or branch in release.forward_compatible
