"""The vGPU (GRID) guest driver each cloud names for its slices (data/vgpu_drivers.yaml): where the node fetches it
and what the download is checked against."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import yaml

from .datadir import SHIPPED_DIR

KINDS = ("aws-s3", "url")


@dataclass(frozen=True)
class VgpuDriverSource:
    """One cloud's GRID driver: a bucket listing (`aws-s3`) whose entry carries the file's MD5, or a fixed URL (`url`)
    with the SHA-256 the cloud publishes for it, or, where it publishes none, the one the spec must pin."""

    cloud: str
    kind: str
    version: str
    source: str
    bucket: str = ""
    bucket_region: str = ""
    prefix: str = ""
    file_pattern: str = ""
    url: str = ""
    published_sha256: str = ""
    multiregions: dict[str, str] = field(default_factory=dict)
    default_multiregion: str = ""
    unverified: str = ""

    @property
    def needs_pinned_checksum(self) -> bool:
        """The cloud publishes no checksum for this file: only a SHA-256 the spec pins can verify it."""
        return self.kind == "url" and not self.published_sha256

    def url_for(self, region: str) -> str:
        """The download URL for a cluster in `region`: the cloud's nearest copy where it keeps several."""
        if "{multiregion}" not in self.url:
            return self.url
        nearest = self.multiregions.get(region.split("-", 1)[0], self.default_multiregion)
        return self.url.replace("{multiregion}", nearest)


@lru_cache(maxsize=1)
def vgpu_drivers() -> dict[str, VgpuDriverSource]:
    with (SHIPPED_DIR / "vgpu_drivers.yaml").open() as handle:
        rows = yaml.safe_load(handle)["drivers"]
    drivers = {cloud: VgpuDriverSource(cloud=cloud, **row) for cloud, row in rows.items()}
    for driver in drivers.values():
        if driver.kind not in KINDS:
            raise ValueError(f"vgpu_drivers.yaml {driver.cloud}: kind {driver.kind!r} is not one of {KINDS}")
    return drivers
