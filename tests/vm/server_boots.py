"""Two boots of a stack's monitoring-server user data (as its plan declares it) on a copy of the image, with an empty
data disk attached the way the cloud attaches it: on GCP a persistent disk whose device name is `prometheus-data`
(/dev/disk/by-id/google-prometheus-data, linked by a udev rule as Google's guest environment links it).

The VM has no package archive and no Grafana repository: the package module fails and the setup script stops once
it needs the `prometheus` user; what must hold is the boot order (no cycle, the unit starts at every boot) and the
data disk formatted once and mounted again on the second boot."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.cloud_init.boot_order_root import enabled_units
from tests.cloud_init.stack_configs import stack_cloud_configs

from .image import Image
from .qemu import GUEST, boot, install_harness, make_seed

SETUP_UNIT = "gpufleet-monitoring-setup.service"
# The device name each cloud's server component gives the data disk, as the guest sees it (serial).
DATA_DISK_SERIAL = {"gcp": "prometheus-data"}
GUEST_FILES = {"gcp": {"/etc/udev/rules.d/65-gpufleet-vm-google-disks.rules":
                       GUEST / "65-gpufleet-vm-google-disks.rules"}}
DATA_DISK_SIZE = "1G"


@dataclass
class ServerBoots:
    stack: str
    cloud: str
    reports: list[dict] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def server_user_data(stack: str) -> str:
    """The monitoring server's cloud-config from the stack's plan (the one that enables the setup unit)."""
    found = [text for text in stack_cloud_configs(stack).values() if SETUP_UNIT in enabled_units(text)]
    assert len(found) == 1, f"{stack}: {len(found)} monitoring servers in the plan"
    return found[0]


def boot_server_twice(image: Image, folder: Path, stack: str, cloud: str, timeout: float) -> ServerBoots:
    disk, data = folder / "disk.img", folder / "data.img"
    subprocess.run(["cp", "--sparse=always", str(image.disk), str(disk)], check=True)
    subprocess.run(["truncate", "-s", DATA_DISK_SIZE, str(data)], check=True)
    install_harness(disk, GUEST_FILES[cloud])
    seed = make_seed(folder, server_user_data(stack).encode(), f"i-{stack}-monitoring")  # GCP: user-data is text
    data_disk = ("-drive", f"file={data},if=none,id=data,format=raw",
                 # a late PCI slot, so the root disk stays /dev/vda (the kernel names virtio disks in bus order)
                 "-device", f"virtio-blk-pci,drive=data,serial={DATA_DISK_SERIAL[cloud]},addr=0x1f")
    result = ServerBoots(stack, cloud)
    for number in (1, 2):
        started = time.monotonic()
        result.reports.append(boot(disk, image.kernel, image.initrd, seed, folder / f"console-{number}.log", None,
                                   timeout, f"gpufleet_vm.boot={number}", extra_args=data_disk))
        result.seconds.append(time.monotonic() - started)
    return result
