"""The migration manifest: one versioned JSON document that `capture` writes and `match`, `sync`, `verify` read.

Why one file: every later step (and a reviewer) works from the same record of what ran locally, not from a second
look at a machine that may have changed since.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..spec.errors import Problem, SpecError

SCHEMA_VERSION = 1
ROOT = "gpufleet migrate"


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Package(Frozen):
    """One installed distribution, normalised so that it installs on a Linux cloud node."""

    name: str  # canonical (PEP 503) name
    version: str  # public version: `+cu113` and other local labels stripped
    local: str | None = None  # the stripped local label ("cu113"), kept for the record
    index_url: str | None = None  # the index that carries this build (PyTorch's per-CUDA index)
    source: Literal["index", "editable", "file", "url"] = "index"
    path: str | None = None  # editable project folder or local archive, synced as source
    url: str | None = None  # a VCS or remote-archive install (PEP 610), installed from the same URL
    marker: str | None = None  # environment marker for packages that exist on one platform only
    note: str | None = None  # what normalisation did and why

    @property
    def requirement(self) -> str:
        """The requirements.txt line that installs this package on the node."""
        if self.source == "editable" and self.path:
            line = f"-e ./src/{Path(self.path).name}"  # sync copies the folder itself into <to>/src/
        elif self.source == "file" and self.path:
            line = f"./src/{Path(self.path).name}"
        elif self.source == "url" and self.url:
            line = f"{self.name} @ {self.url}"
        else:
            line = f"{self.name}=={self.version}"
        return f"{line} ; {self.marker}" if self.marker else line


class PythonEnv(Frozen):
    executable: str
    version: str  # "3.11.7"
    implementation: str  # "cpython"
    platform: str  # sys.platform of the captured interpreter
    packages: tuple[Package, ...]


class Frameworks(Frozen):
    """Versions read from the environment; None where nothing could be read."""

    torch: str | None = None
    tensorflow: str | None = None
    jax: str | None = None
    cuda: str | None = None  # "11.3": the CUDA the frameworks were built against
    cuda_source: str | None = None  # where `cuda` was read
    cudnn: str | None = None
    cudnn_source: str | None = None
    driver: str | None = None  # local NVIDIA driver, from nvidia-smi


class Gpu(Frozen):
    name: str  # as nvidia-smi prints it: "NVIDIA A100-SXM4-40GB"
    memory_mib: int
    model: str | None = None  # catalog model ("A100"), None when the catalog does not carry it
    architecture: str | None = None


class DataFolder(Frozen):
    name: str  # folder name on the node: <to>/<name>
    path: str  # absolute local path
    files: int
    bytes: int
    gitignore: bool  # the listing honoured .gitignore files, as `sync` does
    sha256: dict[str, str] = Field(default_factory=dict)  # relative path -> digest


class Manifest(Frozen):
    schema_version: Literal[1] = 1  # SCHEMA_VERSION
    created: str  # UTC, ISO 8601
    python: PythonEnv
    frameworks: Frameworks
    gpus: tuple[Gpu, ...]
    data: tuple[DataFolder, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def sources(self) -> list[Package]:
        """Editable projects and local archives: copied to the node beside the data."""
        return [p for p in self.python.packages if p.source in ("editable", "file") and p.path]

    def requirements_txt(self) -> str:
        """requirements.txt for the node: one extra index per CUDA build, then one pinned line per package."""
        indexes = sorted({p.index_url for p in self.python.packages if p.index_url})
        lines = [f"--extra-index-url {url}" for url in indexes]
        lines += [p.requirement for p in self.python.packages]
        return "\n".join(lines) + "\n"

    def sha256sum_lines(self) -> str:
        """`sha256sum -c` input, paths relative to the sync destination (<to>/<folder>/<file>)."""
        return "".join(f"{digest}  {folder.name}/{rel}\n" for folder in self.data
                       for rel, digest in sorted(folder.sha256.items()))


def write_manifest(manifest: Manifest, path: Path) -> None:
    path.write_text(json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")


def read_manifest(path: Path) -> Manifest:
    """The manifest at `path`; a missing, unreadable or foreign file is one bad-input problem."""
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise SpecError([Problem("manifest", str(path), "no such file; write one with `gpufleet migrate capture "
                                 "--out FILE`")], root=ROOT) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise SpecError([Problem("manifest", str(path), f"expected a JSON manifest from `gpufleet migrate capture` "
                                 f"({err})")], root=ROOT) from None
    if not isinstance(document, dict) or document.get("schema_version") != SCHEMA_VERSION:
        version = document.get("schema_version") if isinstance(document, dict) else None
        raise SpecError([Problem("manifest.schema_version", version, f"expected {SCHEMA_VERSION}; capture the "
                                 "environment again with this gpufleet")], root=ROOT)
    try:
        return Manifest.model_validate(document)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SpecError([Problem(f"manifest.{where}", first.get("input"), first["msg"])], root=ROOT) from None
