"""What an elastic cluster's Slurm controller gets besides slurmctld: the power programs, their config file and the
minute timer, as `write_files` entries for the controller's cloud-config (`slurm_controller.controller_document`).

- `/usr/local/lib/gpufleet/gpufleet_power/`: the `cloud_init/power` package, only the modules the cloud needs, each
  without docstrings and comments (`shipped.python_without_docstrings`; AWS user data holds 16 KB of gzip);
- `/usr/local/sbin/gpufleet-slurm-power`: the entry point; the controller's setup links ResumeProgram,
  SuspendProgram and ResumeFailProgram (gpufleet-slurm-resume, -suspend, -resume-fail) to it;
- `/etc/gpufleet-slurm/power.json`: `render_power_config`'s text;
- `gpufleet-slurm-power-sync.service` and `.timer`: `sync` every minute, as SlurmUser.
"""

from __future__ import annotations

from pathlib import Path

from .power.config import CONFIG_PATH, PowerConfig, render_power_config
from .shipped import python_without_docstrings

PACKAGE_DIR = Path(__file__).parent / "power"
CONTROLLER_DIR = Path(__file__).parent / "controller"
LIB_PATH = "/usr/local/lib/gpufleet/gpufleet_power"
ENTRY = "gpufleet-slurm-power"
ENTRY_PATH = f"/usr/local/sbin/{ENTRY}"
PROGRAM_LINKS = ("gpufleet-slurm-resume", "gpufleet-slurm-suspend", "gpufleet-slurm-resume-fail")
SYNC_UNIT = "gpufleet-slurm-power-sync"
COMMON_MODULES = ("__init__", "cli", "config", "engine", "http", "metrics", "repair", "slurm")
CLOUD_MODULES = {"aws": ("aws",), "gcp": ("gcp",), "azure": ("azure",)}


def power_modules(cloud: str) -> tuple[str, ...]:
    return (*COMMON_MODULES, *CLOUD_MODULES[cloud])


def power_files(config: PowerConfig) -> list[dict]:
    files = [{"path": CONFIG_PATH, "owner": "root:root", "permissions": "0644", "content": render_power_config(config)}]
    files += [{"path": f"{LIB_PATH}/{module}.py", "owner": "root:root", "permissions": "0644",
               "content": python_without_docstrings((PACKAGE_DIR / f"{module}.py").read_text())}
              for module in power_modules(config.cloud)]
    files.append({"path": ENTRY_PATH, "owner": "root:root", "permissions": "0755",
                  "content": python_without_docstrings((CONTROLLER_DIR / ENTRY).read_text())})
    files += [{"path": f"/etc/systemd/system/{SYNC_UNIT}.{kind}", "owner": "root:root", "permissions": "0644",
               "content": (CONTROLLER_DIR / f"{SYNC_UNIT}.{kind}").read_text()} for kind in ("service", "timer")]
    return files
