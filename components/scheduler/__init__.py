"""Slurm over the fleet, cloud-neutral: what the controller serves (slurm.conf, cgroup.conf, gres.conf) and what the controller VM runs. Each cloud's `slurm_controller.py` declares the VM, its disk, its
secret and its firewall; nodes join themselves (cloud_init's `gpufleet-slurm-node`)."""

from .conf import SLURM_PORTS, SlurmSettings, controller_files, slurm_settings

__all__ = ["SLURM_PORTS", "SlurmSettings", "controller_files", "slurm_settings"]
