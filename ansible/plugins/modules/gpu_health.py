#!/usr/bin/python
"""Reads (and optionally runs) gpufleet's acceptance check on a node."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_health
short_description: Read or run gpufleet's node acceptance check
version_added: "1.0.0"
description:
  - Reads the acceptance check's result (C(health.json) under O(state_dir)), which counts only when it was written
    during the current boot, as the node's own health endpoint does.
  - With O(wait_sec), waits that long for the check that runs at boot (C(gpufleet-health.service)) to write its
    result, e.g. after a reboot.
  - With O(run=true), runs C(gpufleet-health) now. The result is not reported to the cloud (the boot-time check does
    that), so a node a playbook checks is not replaced under it; the playbook decides what happens next.
  - Never changes the node's configuration, so it always reports C(changed=false).
options:
  run:
    description: Run the check now instead of only reading the last result.
    type: bool
    default: false
  wait_sec:
    description: How long to wait for a result written during this boot before reading it.
    type: int
    default: 0
  state_dir:
    description: Where the check writes C(health.json).
    type: path
    default: /var/lib/gpufleet
  check_command:
    description: The acceptance check.
    type: path
    default: /usr/local/sbin/gpufleet-health
author:
  - gpufleet maintainers (@gpufleet)
"""

EXAMPLES = r"""
- name: Run the acceptance check
  gpufleet.day2.gpu_health:
    run: true
  register: node_health

- name: Wait up to 30 minutes for the check that runs at boot
  gpufleet.day2.gpu_health:
    wait_sec: 1800
"""

RETURN = r"""
healthy:
  description: The check passed during this boot.
  type: bool
  returned: always
current:
  description: A result written during this boot exists.
  type: bool
  returned: always
reason:
  description: Why the node is not healthy, in one line; empty when it is.
  type: str
  returned: always
failed_checks:
  description: The names of the checks that failed.
  type: list
  elements: str
  returned: always
checks:
  description: Every check with its outcome and detail, as C(health.json) holds them.
  type: list
  elements: dict
  returned: always
checked_at:
  description: When the result was written (UTC).
  type: str
  returned: always
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

POLL_SEC = 5


def boot_time(proc_root="/proc"):
    """Seconds since the epoch when this boot began (the C(btime) line of /proc/stat)."""
    with open(os.path.join(proc_root, "stat"), encoding="ascii") as handle:
        for line in handle:
            if line.startswith("btime "):
                return int(line.split()[1])
    raise OSError("no btime in /proc/stat")


def verdict(state_dir, started):
    """The node's health as the health endpoint judges it: the result of this boot, or why there is none."""
    path = os.path.join(state_dir, "health.json")
    answer = {"healthy": False, "current": False, "reason": "", "failed_checks": [], "checks": [], "checked_at": ""}
    try:
        written = os.stat(path).st_mtime
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except FileNotFoundError:
        return {**answer, "reason": "the acceptance check has not run yet"}
    except (OSError, ValueError) as err:
        return {**answer, "reason": f"health.json unreadable: {err}"}
    if not isinstance(report, dict):
        return {**answer, "reason": "health.json is not a JSON object"}
    checks = [c for c in report.get("checks", []) if isinstance(c, dict)]
    failed = [str(c.get("check")) for c in checks if not c.get("ok")]
    answer.update(checks=checks, failed_checks=failed, checked_at=str(report.get("checked_at", "")))
    if written < started:
        return {**answer, "reason": "the acceptance check has not run since this boot"}
    answer["current"] = True
    if report.get("healthy") is not True:
        details = [f"{c.get('check')}: {c.get('detail')}" for c in checks if not c.get("ok")]
        return {**answer, "reason": "failed " + "; ".join(details or ["(no check listed)"])}
    return {**answer, "healthy": True}


def main():
    module = AnsibleModule(
        argument_spec={
            "run": {"type": "bool", "default": False},
            "wait_sec": {"type": "int", "default": 0},
            "state_dir": {"type": "path", "default": "/var/lib/gpufleet"},
            "check_command": {"type": "path", "default": "/usr/local/sbin/gpufleet-health"},
        },
        supports_check_mode=True,
    )
    params = module.params
    started = boot_time()
    deadline = time.monotonic() + max(0, params["wait_sec"])
    result = verdict(params["state_dir"], started)
    while not result["current"] and time.monotonic() < deadline:
        time.sleep(POLL_SEC)
        result = verdict(params["state_dir"], started)
    if params["run"] and not module.check_mode:
        if not os.access(params["check_command"], os.X_OK):
            module.fail_json(msg=f"{params['check_command']} is missing: not a gpufleet node?", **result)
        # The check's own cloud report (which may replace the node) stays with the boot-time service.
        environ = {"GPUFLEET_HEALTH_REPORTER": "/bin/true", "GPUFLEET_STATE_DIR": params["state_dir"]}
        module.run_command([params["check_command"]], environ_update=environ)
        result = verdict(params["state_dir"], started)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
