"""The power programs' one entry point: `gpufleet-slurm-power COMMAND [HOSTLIST]`, or a link named for the command
(slurm.conf names the links: a program path there takes no arguments of its own).

  gpufleet-slurm-resume HOSTLIST        ResumeProgram
  gpufleet-slurm-suspend HOSTLIST       SuspendProgram
  gpufleet-slurm-resume-fail HOSTLIST   ResumeFailProgram
  gpufleet-slurm-power sync             every minute, the controller's timer

The config is `/etc/gpufleet-slurm/power.json` (`GPUFLEET_POWER_CONFIG` overrides it, for tests: slurmctld passes
no environment of its own). The log is the config's `log_file`: slurmctld 22.05 closes the programs' stdout and
stderr. A resume that fails inside this program still leaves its nodes DOWN with the error as the reason, so Slurm
requeues their jobs instead of waiting out ResumeTimeout.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from .config import CONFIG_PATH, PowerConfig, load_power_config
from .engine import Provider, release, resume, sync
from .metrics import PowerState
from .slurm import Slurm, reason_text

COMMANDS = {"gpufleet-slurm-resume": "resume", "gpufleet-slurm-suspend": "suspend",
            "gpufleet-slurm-resume-fail": "resume-fail"}
USAGE = "usage: gpufleet-slurm-power {resume,suspend,resume-fail} HOSTLIST | gpufleet-slurm-power sync"
log = logging.getLogger("gpufleet-power")


def provider_for(config: PowerConfig) -> Provider:
    if config.cloud == "aws":
        from .aws import AwsProvider

        return AwsProvider(config)
    if config.cloud == "gcp":
        from .gcp import GcpProvider

        return GcpProvider(config)
    from .azure import AzureProvider

    return AzureProvider(config)


def _logging(config: PowerConfig) -> None:
    handler: logging.Handler
    try:
        Path(config.log_file).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(config.log_file)
    except OSError:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def main(argv: list[str]) -> int:
    command = COMMANDS.get(os.path.basename(argv[0]))
    args = argv[1:]
    if command is None:
        if not args:
            print(USAGE, file=sys.stderr)
            return 2
        command, args = args[0], args[1:]
    if command not in (*COMMANDS.values(), "sync") or (command != "sync" and len(args) < 1):
        print(USAGE, file=sys.stderr)
        return 2
    config = load_power_config(Path(os.environ.get("GPUFLEET_POWER_CONFIG", CONFIG_PATH)).read_text())
    _logging(config)
    slurm = Slurm(config.scontrol)
    state = PowerState(config.state_dir, config.metrics_file, [group.name for group in config.groups])
    names: list[str] = []
    try:
        if command == "sync":
            sync(config, slurm, state)
            return 0
        names = slurm.hostnames(args[0])
        log.info("%s %s", command, args[0])
        if command == "resume":
            resume(config, provider_for(config), slurm, state, names)
        else:
            release(config, provider_for(config), slurm, state, names, timed_out=command == "resume-fail")
        return 0
    except Exception as error:  # the nodes must not wait out ResumeTimeout for an error already known
        log.exception("%s failed", command)
        if command == "resume" and names:
            reason = reason_text(f"gpufleet error: {type(error).__name__}: {error}")
            ours = [name for name in names if config.group_of(name) is not None]
            for state_name in ("DOWN", "POWER_DOWN_FORCE"):
                try:
                    slurm.update(ours, state_name, reason)
                except Exception:
                    log.exception("could not set %s %s", ",".join(ours), state_name)
        return 1
