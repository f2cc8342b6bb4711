"""Boots a disk under qemu with a NoCloud seed and reads the guest's console report.

KVM is used only where it really runs a stock kernel; the nested "PVM" KVM of these machines does not (`-cpu host`
aborts, a direct boot dies with an emulation failure), so TCG is the default and KVM needs GPUFLEET_VM_KVM=1."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPORT = re.compile(r"GPUFLEET-VM-REPORT-BEGIN\r?\n(.*?)GPUFLEET-VM-REPORT-END", re.S)
METADATA_ADDRESS = "169.254.169.254"
RELAY = Path(__file__).with_name("relay.py")


def accelerator() -> list[str]:
    """KVM only when asked for and usable; else TCG (the PVM KVM here cannot run a stock kernel)."""
    if os.environ.get("GPUFLEET_VM_KVM") == "1" and os.access("/dev/kvm", os.R_OK | os.W_OK):
        return ["-accel", "kvm", "-cpu", "host"]
    return ["-accel", "tcg", "-cpu", "max"]


GUEST = Path(__file__).with_name("guest")


def install_harness(disk: Path, guest_files: dict[str, Path] | None = None, folders: tuple[str, ...] = ()) -> None:
    """Writes the report unit and script into `disk` (ext4, not mounted) with debugfs, enabled; `guest_files` (guest
    path -> host file) are written too, into folders the image already has or that `folders` creates first."""
    script = "\n".join([
        *(f"mkdir {folder}" for folder in folders),
        *(f"write {source} {target}" for target, source in sorted((guest_files or {}).items())),
        f"write {GUEST / 'gpufleet-vm-report'} /usr/local/sbin/gpufleet-vm-report",
        f"write {GUEST / 'gpufleet-vm-report.service'} /etc/systemd/system/gpufleet-vm-report.service",
        "mkdir /etc/systemd/system/multi-user.target.wants",
        "symlink /etc/systemd/system/multi-user.target.wants/gpufleet-vm-report.service "
        "/etc/systemd/system/gpufleet-vm-report.service",
        "mkdir /var/lib/gpufleet-vm", ""])
    done = subprocess.run(["debugfs", "-w", "-f", "-", str(disk)], input=script, capture_output=True, text=True,
                          check=True)
    listing = subprocess.run(["debugfs", "-R", "stat /usr/local/sbin/gpufleet-vm-report", str(disk)],
                             capture_output=True, text=True).stdout
    assert "Mode:  0755" in listing or "Mode:  0775" in listing, done.stdout + done.stderr + listing


def read_report(disk: Path) -> str:
    return subprocess.run(["debugfs", "-R", "cat /var/lib/gpufleet-vm/report", str(disk)], capture_output=True,
                          text=True).stdout


def make_seed(folder: Path, user_data: bytes, instance_id: str) -> Path:
    """A NoCloud seed; `user_data` as the cloud's datasource hands it to cloud-init (gzip on AWS and Azure)."""
    (folder / "user-data").write_bytes(user_data)
    (folder / "meta-data").write_text(f"instance-id: {instance_id}\nlocal-hostname: gpufleet-vm\n")
    seed = folder / "seed.iso"
    tool = shutil.which("genisoimage") or shutil.which("mkisofs")
    subprocess.run([tool, "-quiet", "-output", str(seed), "-volid", "cidata", "-joliet", "-rock",
                    str(folder / "user-data"), str(folder / "meta-data")], check=True)
    return seed


def user_network(services: dict[str, int], host_ports: dict[int, int] | None = None) -> str:
    """The guest's only NIC: slirp with no route out. Each `services` address (port 80 in the guest) is relayed to a
    server on the host's 127.0.0.1 at that port; each `host_ports` entry forwards 127.0.0.1:host to the guest."""
    # The slirp network is link-local, so the clouds' metadata address (169.254.169.254) lies inside it and guestfwd
    # can serve it: the user data runs unmodified.
    nic = "user,model=virtio-net-pci,restrict=on,net=169.254.0.0/16"
    for address, port in sorted(services.items()):
        nic += f",guestfwd=tcp:{address}:80-cmd:{sys.executable} {RELAY} {port}"
    for host, guest in sorted((host_ports or {}).items()):
        nic += f",hostfwd=tcp:127.0.0.1:{host}-:{guest}"
    return nic


def machine(disk: Path, kernel: Path, initrd: Path, seed: Path, console: Path, kernel_args: str = "") -> list[str]:
    """qemu with the disk, the seed and a serial console file; the NIC is the caller's."""
    return ["qemu-system-x86_64", *accelerator(), "-m", "2048", "-smp", "2", "-kernel", str(kernel), "-initrd",
            str(initrd), "-append",
            f"root=/dev/vda rw console=ttyS0 net.ifnames=0 biosdevname=0 quiet {kernel_args}".strip(),
            "-drive", f"file={disk},if=virtio,format=raw", "-drive", f"file={seed},media=cdrom,readonly=on",
            "-nographic", "-serial", f"file:{console}", "-monitor", "none"]


def boot(disk: Path, kernel: Path, initrd: Path, seed: Path, console: Path, metadata_port: int | None,
         timeout: float, kernel_args: str = "", extra_args: tuple[str, ...] = ()) -> dict:
    """One boot until the guest powers off (or reboots: -no-reboot); returns the parsed report. `kernel_args` reach
    the guest's report script through /proc/cmdline; `extra_args` are more qemu arguments (a data disk)."""
    command = ["timeout", str(int(timeout)), *machine(disk, kernel, initrd, seed, console, kernel_args),
               *extra_args, "-nic", user_network({METADATA_ADDRESS: metadata_port} if metadata_port else {}),
               "-no-reboot"]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = console.read_text(errors="replace") if console.exists() else ""
    match = REPORT.search(read_report(disk))
    report: dict = {"qemu_rc": done.returncode, "qemu_output": done.stdout[-2000:], "console_tail": text[-3000:]}
    subprocess.run(["debugfs", "-w", "-R", "rm /var/lib/gpufleet-vm/report", str(disk)], capture_output=True)
    if match:
        for line in match.group(1).splitlines():
            line = line.strip("\r")
            if line.startswith("unit "):
                _, name, rest = line.split(" ", 2)
                report.setdefault("units", {})[name] = rest.split()
            elif line.startswith("started "):
                _, name, *stamps = line.split()
                report.setdefault("started", {})[name] = [int(s) if s.isdigit() else 0 for s in stamps]
            elif "=" in line:
                key, _, value = line.partition("=")
                report[key] = value
    return report
