"""Two boots of one stack's user data on a copy of the image, with the cloud's fake metadata service on the host.

The seed carries the user data as the cloud's datasource hands it to cloud-init: AWS's `userData` and Azure's
`customData` arrive base64-decoded, i.e. gzip (cloud_init/encode.py), and cloud-init inflates them; GCP's
`user-data` is the text. On the second boot the host announces an interruption (or GCP host maintenance) once the
watcher polls, and the guest's report waits for the drain hook: the watcher's whole notice path runs in the VM."""

from __future__ import annotations

import base64
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpufleet.boot import user_data_for
from gpufleet.cloud_init import encode_user_data
from gpufleet.cloud_init.encode import GZIPPED
from gpufleet.cloud_init.s3_bootstrap import aws_bootstrap, node_config_key
from tests.cloud_init.conftest import _stack
from tests.cloud_init.metadata_servers import MetadataServer

from .image import Image
from .qemu import boot, install_harness, make_seed

# The path each cloud's watcher polls: the notice is announced only once the watcher is seen polling.
WATCHER_POLLS = {"aws": "/latest/meta-data/spot/instance-action", "gcp": "/computeMetadata/v1/instance/",
                 "azure": "/metadata/scheduledevents"}


@dataclass
class StackBoots:
    stack: str
    cloud: str
    reports: list[dict] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    azure_acks: list[dict] = field(default_factory=list)
    s3_gets: int = 0
    notice_kind: str = ""


# Stacks booted through the S3 bootstrap (cloud_init/s3_bootstrap.py), whatever their size: the boothook fetches
# the config from the fake metadata service, which also answers path-style S3, and every AWS node too large for 16 KB
# boots this way.
BOOTSTRAPPED = {"aws-train"}
# What needs an A3 Mega and Google's registry, stood in per stack (guest files, folders to create for them): on
# gcp-train a docker that plays the TCPXO installer and RxDM, and a registry check that accepts a pinned reference.
TCPXO_GUEST = Path(__file__).parent / "guest" / "tcpxo"
STAND_INS = {"gcp-train": (
    {"/usr/local/bin/docker": TCPXO_GUEST / "docker", "/usr/local/bin/gpufleet-vm-oci-verify": TCPXO_GUEST / "oci-verify",
     **{f"/etc/systemd/system/{unit}.d/vm-stand-ins.conf": TCPXO_GUEST / "vm-stand-ins.conf"
        for unit in ("gpufleet-tcpxo-plugin.service", "gpufleet-rxdm.service")}},
    ("/etc/systemd/system/gpufleet-tcpxo-plugin.service.d", "/etc/systemd/system/gpufleet-rxdm.service.d"))}
BOOTSTRAP_BUCKET = "gpufleet-node-config-vm"


def seed_user_data(stack: str, cloud: str, server: MetadataServer) -> bytes:
    """What the cloud's datasource gives cloud-init: the API's field, base64-decoded where the API takes base64.
    A bootstrapped stack's config is put in `server`'s S3 and its user data is the boothook."""
    text = user_data_for(_stack(stack), "gpufleet-vm")
    if stack in BOOTSTRAPPED:
        server.s3_objects[f"/{BOOTSTRAP_BUCKET}/{node_config_key(text)}"] = text.encode()
        text = aws_bootstrap(BOOTSTRAP_BUCKET, text, s3_endpoint="http://169.254.169.254")
    encoded = encode_user_data(text, cloud)
    return base64.b64decode(encoded) if cloud in GZIPPED else encoded.encode()


def announce(server: MetadataServer, cloud: str, spot: bool) -> str:
    """Starts the notice the watcher must drain for; returns the notice kind the drain marker records."""
    if cloud == "gcp" and not spot:
        server.maintenance_event = "TERMINATE_ON_HOST_MAINTENANCE"
        return "maintenance"
    server.notice()
    return "interruption"  # AWS instance-action, GCP preemption, Azure Preempt


def announce_when_polled(server: MetadataServer, cloud: str, spot: bool, result: StackBoots, stop: threading.Event,
                         since: int) -> None:
    while not stop.wait(0.5):
        with server.lock:
            polled = any(WATCHER_POLLS[cloud] in request for request in server.requests[since:])
        if polled:
            result.notice_kind = announce(server, cloud, spot)
            return


def boot_twice(image: Image, folder: Path, stack: str, cloud: str, timeout: float) -> StackBoots:
    disk = folder / "disk.img"
    subprocess.run(["cp", "--sparse=always", str(image.disk), str(disk)], check=True)
    install_harness(disk, *STAND_INS.get(stack, ({}, ())))
    spot = _stack(stack).spec.market.type == "spot"
    result = StackBoots(stack, cloud)
    with MetadataServer(cloud) as server:
        seed = make_seed(folder, seed_user_data(stack, cloud, server), f"i-{stack}")
        for number in (1, 2):
            stop = threading.Event()
            if number == 2:
                since = len(server.requests)
                threading.Thread(target=announce_when_polled, args=(server, cloud, spot, result, stop, since),
                                 daemon=True).start()
            started = time.monotonic()
            result.reports.append(boot(disk, image.kernel, image.initrd, seed, folder / f"console-{number}.log",
                                       int(server.url.rsplit(":", 1)[1]), timeout,
                                       f"gpufleet_vm.boot={number}" + (" gpufleet_vm.drain=1" if number == 2 else "")))
            result.seconds.append(time.monotonic() - started)
            stop.set()
        result.requests = list(server.requests)
        result.s3_gets = len(server.s3_gets)
        result.azure_acks = list(server.acks)
    return result
