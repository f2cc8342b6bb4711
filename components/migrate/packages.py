"""Normalises what an interpreter has installed into lines that install on a Linux cloud node (pip#9050, conda#11580).

- local versions (`torch 1.12.1+cu113`): the index carries no `+cu113`; the public version is kept and the package
  comes from PyTorch's index for that CUDA (https://download.pytorch.org/whl/cu113);
- VCS and remote-archive installs (PEP 610 `vcs_info`, `archive_info`): installed from the same URL, pinned to
  the commit that was installed;
- editable installs (PEP 610 `dir_info.editable`): the project folder is synced as source and installed with `-e`;
- `@ file://` installs: a local archive or folder that exists is synced as source; conda's build paths that no
  longer exist (`file:///croot/...`) are resolved to `name==version` from the index;
- packages that exist on one platform only get an environment marker (docker-library/python#717).
The same normalisation runs on the node's report in `verify`, so the two sides compare like for like.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from packaging.markers import Marker
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .manifest import Package

PYTORCH_INDEX = "https://download.pytorch.org/whl/{label}"
# Local labels PyTorch publishes an index for: CUDA builds, CPU-only and ROCm.
PYTORCH_LABEL_PREFIXES = ("cu", "cpu", "rocm")
# Packages published for one platform only, and the marker that keeps them off a Linux node.
PLATFORM_ONLY = {
    "pywin32": 'sys_platform == "win32"', "pywin32-ctypes": 'sys_platform == "win32"',
    "pywinpty": 'sys_platform == "win32"', "pypiwin32": 'sys_platform == "win32"', "wmi": 'sys_platform == "win32"',
    "windows-curses": 'sys_platform == "win32"', "comtypes": 'sys_platform == "win32"',
    "appnope": 'sys_platform == "darwin"', "tensorflow-macos": 'sys_platform == "darwin"',
    "tensorflow-metal": 'sys_platform == "darwin"', "pyobjc": 'sys_platform == "darwin"',
    "pyobjc-core": 'sys_platform == "darwin"', "pyobjc-framework-cocoa": 'sys_platform == "darwin"',
    "tensorflow-intel": 'sys_platform == "win32"',
}
# Installer tooling: present in every environment, versions differ by design.
TOOLING = frozenset({"pip", "setuptools", "wheel", "distribute"})


def normalise(raw: list[dict]) -> tuple[Package, ...]:
    """Each raw `{name, version, direct_url}` as a Package, tooling left out, sorted by name."""
    packages = [_package(item) for item in raw if canonicalize_name(item["name"]) not in TOOLING]
    return tuple(sorted(packages, key=lambda p: p.name))


def _package(item: dict) -> Package:
    name = canonicalize_name(item["name"])
    version, local = _split_local(item["version"])
    marker = PLATFORM_ONLY.get(name)
    index_url = note = None
    if local and local.startswith(PYTORCH_LABEL_PREFIXES):
        index_url = PYTORCH_INDEX.format(label=local)
        note = f"local version +{local} stripped; installed from PyTorch's {local} index"
    elif local:
        note = f"local version +{local} stripped: no public index carries it"
    if marker:
        note = f"{note}; " if note else ""
        note += f"{item['name']} exists only where {marker}"
    url = item.get("direct_url") or {}
    remote = _remote_url(url)
    if remote:
        return Package(name=name, version=version, local=local, source="url", url=remote, marker=marker,
                       note=f"installed from {remote}: installed on the node from the same URL")
    if not url.get("url", "").startswith("file://"):
        return Package(name=name, version=version, local=local, index_url=index_url, marker=marker, note=note)
    path = unquote(urlparse(url["url"]).path)
    if (url.get("dir_info") or {}).get("editable"):
        return Package(name=name, version=version, local=local, source="editable", path=path, marker=marker,
                       note=f"editable install of {path}: synced as source, installed with -e")
    if Path(path).exists():
        return Package(name=name, version=version, local=local, source="file", path=path, marker=marker,
                       note=f"installed from {path}: synced as source")
    return Package(name=name, version=version, local=local, index_url=index_url, marker=marker,
                   note=f"installed from {path}, which no longer exists (a conda build path): resolved to "
                        f"{name}=={version} from the index")


def _remote_url(direct_url: dict) -> str | None:
    """A PEP 610 record of a VCS checkout (`git+https://...@<commit>`) or a remote archive, as a PEP 508 URL."""
    url = direct_url.get("url", "")
    if not url or url.startswith("file://"):
        return None
    vcs = direct_url.get("vcs_info")
    if vcs:
        return f"{vcs['vcs']}+{url}@{vcs.get('commit_id') or vcs.get('requested_revision') or ''}".rstrip("@")
    return url


def _split_local(text: str) -> tuple[str, str | None]:
    try:
        parsed = Version(text)
    except InvalidVersion:
        return text, None
    return parsed.public, parsed.local


def applies(package: Package, environment: dict[str, str]) -> bool:
    """Whether the package belongs on a machine with these marker values (the node's, in `verify`)."""
    return package.marker is None or Marker(package.marker).evaluate(environment)
