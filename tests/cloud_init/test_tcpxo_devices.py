"""boot.d/08-tcpxo-devices on a fake sysfs (PCI devices as the kernel lays them out: bus/pci/devices/<address> links
to the device folders), with stand-ins for modprobe, mount and mountpoint that record what they were asked: every
aperture device (PCI 1ae0:0084) and only those is bound under /dev/aperture_devices, once across boots; a module
that does not load or a machine without aperture devices fails the step with the reason."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .conftest import FILES

STEP = FILES.parent / "gpudirect" / "usr/local/lib/gpufleet/boot.d/08-tcpxo-devices"
APERTURES = ["0000:06:00.1", "0000:86:00.1"]
STAND_INS = {
    "modprobe": '#!/bin/bash\necho "modprobe $*" >> "$FAKE_LOG"\n[ "${FAKE_MODPROBE_FAILS:-0}" = 1 ] && exit 1\n'
                'mkdir -p "$GPUFLEET_DEV_ROOT/dev" && : > "$GPUFLEET_DEV_ROOT/dev/dmabuf_import_helper"\n',
    "mount": '#!/bin/bash\necho "mount $*" >> "$FAKE_LOG"\necho "${@: -1}" >> "$FAKE_MOUNTS"\n',
    "mountpoint": '#!/bin/bash\ngrep -qxF "${@: -1}" "$FAKE_MOUNTS" 2>/dev/null\n',
}


def sysfs(root: Path, devices: dict[str, tuple[str, str]]) -> Path:
    """address -> (vendor, device) as /sys shows them."""
    sys_root = root / "sys"
    (sys_root / "bus/pci/devices").mkdir(parents=True)
    for address, (vendor, device) in devices.items():
        folder = sys_root / "devices/pci0000:00" / address
        folder.mkdir(parents=True)
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "device").write_text(device + "\n")
        (folder / "resource0").write_text("")
        (sys_root / "bus/pci/devices" / address).symlink_to(os.path.relpath(folder, sys_root / "bus/pci/devices"))
    return sys_root


def boot(tmp_path: Path, sys_root: Path, modprobe_fails: bool = False) -> tuple[subprocess.CompletedProcess, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in STAND_INS.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GPUFLEET_LIB": str(FILES / "usr/local/lib/gpufleet"),
           "GPUFLEET_ENV_FILE": "/nonexistent", "GPUFLEET_SYSFS_ROOT": str(sys_root),
           "GPUFLEET_DEV_ROOT": str(tmp_path / "root"), "FAKE_LOG": str(log), "FAKE_MOUNTS": str(tmp_path / "mounts"),
           "FAKE_MODPROBE_FAILS": "1" if modprobe_fails else "0", "GPUFLEET_TCPXO_MODULE": "import-helper",
           "GPUFLEET_TCPXO_DEVICE": "/dev/dmabuf_import_helper", "GPUFLEET_TCPXO_APERTURE_ID": "0x1ae0:0x0084",
           "GPUFLEET_TCPXO_APERTURE_DIR": "/dev/aperture_devices"}
    done = subprocess.run(["bash", str(STEP)], env=env, capture_output=True, text=True, timeout=30)
    return done, log.read_text() if log.exists() else ""


@pytest.fixture
def a3_mega(tmp_path) -> Path:
    """Two aperture devices beside an H100 (10de) and a gVNIC (1ae0:0042): only the apertures may be bound."""
    return sysfs(tmp_path, {APERTURES[0]: ("0x1ae0", "0x0084"), APERTURES[1]: ("0x1ae0", "0x0084"),
                            "0000:04:00.0": ("0x10de", "0x2330"), "0000:00:0c.0": ("0x1ae0", "0x0042")})


def test_every_aperture_device_and_only_those_is_bound_once_across_boots(tmp_path, a3_mega):
    done, calls = boot(tmp_path, a3_mega)
    assert done.returncode == 0, done.stderr
    target = tmp_path / "root/dev/aperture_devices"
    mounts = [line for line in calls.splitlines() if line.startswith("mount ")]
    assert mounts == [f"mount --bind {a3_mega}/devices/pci0000:00/{a} {target}/{a}" for a in APERTURES]
    assert "modprobe import-helper" in calls and "bound 2 aperture device(s)" in done.stderr
    done, calls = boot(tmp_path, a3_mega)  # the next boot's run (or a rerun) finds them bound
    assert done.returncode == 0, done.stderr
    assert len([line for line in calls.splitlines() if line.startswith("mount ")]) == 2


def test_a_module_that_does_not_load_fails_the_step_naming_the_install_log(tmp_path, a3_mega):
    done, _ = boot(tmp_path, a3_mega, modprobe_fails=True)
    assert done.returncode == 1
    assert "cannot load import-helper: see install.d/63-gcp-tcpxo" in done.stderr
    assert "/dev/dmabuf_import_helper is missing" in done.stderr


def test_a_machine_without_aperture_devices_fails_the_step(tmp_path):
    done, calls = boot(tmp_path, sysfs(tmp_path, {"0000:04:00.0": ("0x10de", "0x2330")}))
    assert done.returncode == 1 and "mount " not in calls
    assert "no aperture device (PCI 0x1ae0:0x0084) on this machine: GPUDirect-TCPXO needs an A3 Mega" in done.stderr
