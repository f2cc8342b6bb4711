"""A small Debian 12 VM image with systemd and cloud-init, built offline-capable from Debian's archive (the host's
apt sources) with mmdebstrap, turned into an ext4 disk with `mke2fs -d` (no loop devices), cached by a hash of
its inputs under ${XDG_CACHE_HOME:-~/.cache}/gpufleet-vm."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SUITE = "bookworm"
PACKAGES = ("systemd", "systemd-sysv", "udev", "dbus", "cloud-init", "linux-image-cloud-amd64", "initramfs-tools",
            "python3", "curl", "ca-certificates", "ifupdown", "isc-dhcp-client", "iproute2", "gnupg", "kmod")
DISK_SIZE = "4G"
# The guest reads only the NoCloud seed; the apt sources point nowhere reachable, so apt fails at once.
GUEST_FILES = {
    "etc/cloud/cloud.cfg.d/90-gpufleet-vm.cfg": "datasource_list: [ NoCloud, None ]\n",
    "etc/systemd/journald.conf.d/persistent.conf": "[Journal]\nStorage=persistent\n",
    "etc/apt/apt.conf.d/90-gpufleet-vm": 'Acquire::Retries "0";\nAcquire::http::Timeout "3";\n',
    "etc/network/interfaces": "auto lo\niface lo inet loopback\nallow-hotplug eth0\niface eth0 inet dhcp\n",
    # No DNS in the VM: every download fails at once instead of after resolver timeouts.
    "etc/dhcp/dhclient.conf": "supersede domain-name-servers 127.0.0.1;\nrequest subnet-mask, broadcast-address, "
                              "routers;\n",
    # The metadata names the clouds' images resolve locally; the harness forwards 169.254.169.254 to a fake.
    "etc/hosts": "127.0.0.1 localhost\n169.254.169.254 metadata.google.internal\n",
}


@dataclass(frozen=True)
class Image:
    disk: Path
    kernel: Path
    initrd: Path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpufleet-vm"


def inputs_hash() -> str:
    digest = hashlib.sha256()
    digest.update(repr((SUITE, PACKAGES, DISK_SIZE, sorted(GUEST_FILES.items()))).encode())
    for source in sorted(Path("/etc/apt").glob("sources.list*")) + sorted(Path("/etc/apt/sources.list.d").glob("*")):
        if source.is_file():
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def build_image(log) -> Image:
    """The cached image, built when its inputs changed."""
    folder = cache_root() / inputs_hash()
    image = Image(folder / "disk.img", folder / "vmlinuz", folder / "initrd.img")
    if all(p.exists() for p in (image.disk, image.kernel, image.initrd)):
        return image
    work = folder.with_suffix(".building")
    shutil.rmtree(work, ignore_errors=True)
    root = work / "root"
    work.mkdir(parents=True)
    subprocess.run(["mmdebstrap", "--mode=root", "--variant=minbase", "--include=" + ",".join(PACKAGES), SUITE,
                    str(root)], check=True, stdout=log, stderr=subprocess.STDOUT, timeout=900)
    return finish_image(root, work, folder, log)


def finish_image(root: Path, work: Path, folder: Path, log) -> Image:
    """The guest files, kernel, initrd and the ext4 disk made from a bootstrapped `root`."""
    for relative, content in GUEST_FILES.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    subprocess.run(["chroot", str(root), "passwd", "-d", "root"], check=True, stdout=log, stderr=subprocess.STDOUT)
    (root / "etc/fstab").write_text("/dev/vda / ext4 defaults 0 1\n")
    (root / "etc/hostname").write_text("gpufleet-vm\n")
    (root / "var/log/journal").mkdir(parents=True, exist_ok=True)
    kernel = sorted((root / "boot").glob("vmlinuz-*"))[-1]
    initrd = sorted((root / "boot").glob("initrd.img-*"))[-1]
    shutil.copy(kernel, work / "vmlinuz")
    shutil.copy(initrd, work / "initrd.img")
    subprocess.run(["mke2fs", "-q", "-t", "ext4", "-d", str(root), str(work / "disk.img"), DISK_SIZE], check=True,
                   stdout=log, stderr=subprocess.STDOUT, timeout=600)
    shutil.rmtree(root)
    shutil.rmtree(folder, ignore_errors=True)
    work.rename(folder)
    return Image(folder / "disk.img", folder / "vmlinuz", folder / "initrd.img")
