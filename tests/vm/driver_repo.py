"""An apt repository of stand-in NVIDIA driver packages, built in the test with dpkg-deb and dpkg-scanpackages and
served over HTTP from the host, for the day-2 VM test (tests/vm/test_ansible_day2.py).

The packages carry the names Ubuntu's archive gives the driver (the names the node's install step and the Ansible
driver role both ask for) and behave like a driver where a playbook can tell: the "kernel module" package loads its
version at boot, and `nvidia-smi` from the utils package answers only when the loaded version is its own (a real
one reports "Driver/library version mismatch" until the node reboots). A broken version's module fails to load, so
`nvidia-smi`, and with it the node's acceptance check, fails."""

from __future__ import annotations

import gzip
import hashlib
import subprocess
import threading
import time
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from gpufleet.cloud_init.config import BootConfig

LOADED = "/run/gpufleet-vm-nvidia/loaded"
LOAD_SCRIPT = "/usr/lib/gpufleet-vm-nvidia/load"
LOAD_UNIT = "gpufleet-vm-nvidia-load.service"


@dataclass(frozen=True)
class DriverPackages:
    """The names of one node's driver packages, as the node's install step and the driver role derive them."""

    headless: str
    utils: str
    compute_utils: str
    fabric_manager: str | None
    kernel_modules: str

    @classmethod
    def for_node(cls, config: BootConfig, kernel: str) -> DriverPackages:
        branch, flavor = config.driver_branch, "-open" if config.driver_flavor == "open" else ""
        return cls(headless=f"nvidia-headless-no-dkms-{branch}-server{flavor}", utils=f"nvidia-utils-{branch}-server",
                   compute_utils=f"nvidia-compute-utils-{branch}-server",
                   fabric_manager=f"nvidia-fabricmanager-{branch}" if config.nvswitch else None,
                   kernel_modules=f"linux-modules-nvidia-{branch}-server{flavor}-{kernel}")

    def names(self) -> list[str]:
        return [name for name in (self.headless, self.utils, self.compute_utils, self.fabric_manager,
                                  self.kernel_modules) if name]


def package_version(driver: str) -> str:
    """The Debian version of the stand-in packages of `driver` (what `<driver>-*` matches)."""
    return f"{driver}-0gpufleet1"


NVIDIA_SMI = """#!/bin/sh
# gpufleet VM stand-in for nvidia-smi {driver}: answers only from the stand-in module loaded at boot.
loaded=$(cat {loaded} 2>/dev/null) || {{
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."; exit 9; }}
if [ "$loaded" != {driver} ]; then
  echo "Failed to initialize NVML: Driver/library version mismatch"; echo "NVML library version: {driver}"; exit 18
fi
case "$*" in
  *--query-gpu=driver_version*) echo {driver} ;;
  *--query-compute-apps=*) ;;
  *) echo "GPU 0: gpufleet VM stand-in (driver {driver})" ;;
esac
"""

LOAD = """#!/bin/sh
# gpufleet VM stand-in for loading the NVIDIA kernel module {driver} at boot.
{body}
"""
LOAD_OK = "mkdir -p {run} && echo {driver} > {loaded}"
LOAD_BROKEN = "echo 'NVRM: the NVIDIA probe routine failed for 1 device(s) (stand-in {driver} is broken)' >&2; exit 1"

UNIT = f"""[Unit]
Description=gpufleet VM stand-in: load the NVIDIA kernel module
Before=gpufleet-boot.service gpufleet-health.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={LOAD_SCRIPT}

[Install]
WantedBy=multi-user.target
"""


def _files(role: str, driver: str, broken: bool) -> dict[str, tuple[str, int]]:
    """Path in the package -> (content, mode)."""
    if role == "utils":
        return {"usr/bin/nvidia-smi": (NVIDIA_SMI.format(driver=driver, loaded=LOADED), 0o755)}
    if role == "kernel_modules":
        body = (LOAD_BROKEN if broken else LOAD_OK).format(driver=driver, loaded=LOADED, run=Path(LOADED).parent)
        return {LOAD_SCRIPT.lstrip("/"): (LOAD.format(driver=driver, body=body), 0o755),
                f"usr/lib/systemd/system/{LOAD_UNIT}": (UNIT, 0o644)}
    if role == "fabric_manager":
        return {"usr/bin/nv-fabricmanager": (f"#!/bin/sh\necho 'Fabric Manager version is : {driver}'\n", 0o755)}
    return {f"usr/share/gpufleet-vm-nvidia/{role}": (f"{driver}\n", 0o644)}


def build_package(folder: Path, name: str, version: str, files: dict[str, tuple[str, int]], depends: str = "",
                  postinst: str = "") -> Path:
    """`NAME_VERSION_amd64.deb` in `folder`, holding `files` (path in the package -> (content, mode))."""
    root = folder / f"{name}_{version}"
    for relative, (content, mode) in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        path.chmod(mode)
    if f"usr/lib/systemd/system/{LOAD_UNIT}" in files:  # enabled as a packaged unit is (the wants link ships with it)
        wants = root / "usr/lib/systemd/system/multi-user.target.wants"
        wants.mkdir(parents=True)
        (wants / LOAD_UNIT).symlink_to(f"../{LOAD_UNIT}")
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: {version}\nArchitecture: amd64\nMaintainer: gpufleet tests "
        f"<tests@gpufleet.invalid>\nSection: libs\nPriority: optional\n"
        + (f"Depends: {depends}\n" if depends else "")
        + f"Description: gpufleet VM stand-in for {name} {version}\n")
    if postinst:
        (root / "DEBIAN" / "postinst").write_text(f"#!/bin/sh\nset -e\n{postinst}\n")
        (root / "DEBIAN" / "postinst").chmod(0o755)
    deb = folder / f"{name}_{version}_amd64.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(deb)], check=True,
                   capture_output=True)
    return deb


class AptArchive:
    """Flat apt repositories (`deb [trusted=yes] URL/POCKET/ ./`), one per pocket, served on 127.0.0.1. Pocket
    "security" is labelled as a security pocket is (its suite ends in -security), which is how the security playbook
    tells a security update from any other."""

    POCKETS = ("main", "security")

    def __init__(self, folder: Path, packages: DriverPackages):
        """Served from `folder`/repo; packages are built in `folder`/build."""
        self.folder, self.build, self.packages = folder / "repo", folder / "build", packages
        self.build.mkdir(parents=True)
        handler = partial(_QuietHandler, directory=str(self.folder))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.requests: list[str] = []
        self.server.requests = self.requests  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        for pocket in self.POCKETS:
            (self.folder / pocket).mkdir(parents=True)
            self._write_indexes(pocket)

    def __enter__(self) -> AptArchive:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @classmethod
    def sources(cls, address: str) -> str:
        """The guest's sources.list for the archive served at http://`address`/."""
        return "".join(f"deb [trusted=yes] http://{address}/{pocket}/ ./\n" for pocket in cls.POCKETS)

    def publish_driver(self, driver: str, broken: bool = False) -> None:
        roles = {"headless": self.packages.headless, "utils": self.packages.utils,
                 "compute_utils": self.packages.compute_utils, "fabric_manager": self.packages.fabric_manager,
                 "kernel_modules": self.packages.kernel_modules}
        for role, name in roles.items():
            # As in Ubuntu's archive, the module package is unversioned in the install requests and built for one
            # driver: it depends on exactly that driver's packages.
            depends = f"{self.packages.headless} (= {package_version(driver)})" if role == "kernel_modules" else ""
            if name:
                self.publish(name, package_version(driver), _files(role, driver, broken), depends=depends)

    def publish(self, name: str, version: str, files: dict[str, tuple[str, int]] | None = None, pocket: str = "main",
                depends: str = "", postinst: str = "") -> None:
        files = files or {f"usr/share/gpufleet-vm/{name}": (f"{version}\n", 0o644)}
        deb = build_package(self.build, name, version, files, depends, postinst)
        deb.rename(self.folder / pocket / deb.name)
        self._write_indexes(pocket)

    def _write_indexes(self, pocket: str) -> None:
        folder = self.folder / pocket
        listing = subprocess.run(["dpkg-scanpackages", "--multiversion", "."], cwd=folder, capture_output=True,
                                 check=True).stdout
        (folder / "Packages").write_bytes(listing)
        (folder / "Packages.gz").write_bytes(gzip.compress(listing, mtime=0))
        lines = ["Origin: gpufleet-vm", "Label: gpufleet-vm", f"Suite: gpufleet-vm-{pocket}", "Architectures: amd64",
                 "Date: " + time.strftime("%a, %d %b %Y %H:%M:%S UTC", time.gmtime()), "SHA256:"]
        for name in ("Packages", "Packages.gz"):
            data = (folder / name).read_bytes()
            lines.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} {name}")
        (folder / "Release").write_text("\n".join(lines) + "\n")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        self.server.requests.append(self.requestline)  # type: ignore[attr-defined]
