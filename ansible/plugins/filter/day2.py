"""Filters the gpufleet.day2 roles use to read what a node already says about itself, on the control machine."""

from __future__ import annotations

import re

# apt-get --simulate: "Inst NAME [OLD] (NEW ORIGIN [ARCH])", or "Inst NAME (NEW ORIGIN [ARCH])" for a new package.
INST_LINE = re.compile(r"^Inst (?P<name>\S+)(?: \[(?P<old>[^\]]*)\])? \((?P<new>\S+) (?P<origin>[^\[)]*)")
BLACKLIST_ENTRY = re.compile(r'^\s*"([^"]+)";', re.MULTILINE)
MICROCODE_PACKAGES = ("intel-microcode", "amd64-microcode")


def node_env(text):
    """`/etc/gpufleet/node.env` (KEY=VALUE lines, values optionally quoted) as a dict."""
    values = {}
    for line in str(text).splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip().strip("'\"")
    return values


def apt_blacklist(text):
    """The package name prefixes of the node's unattended-upgrades blacklist (gpufleet's NVIDIA hold file)."""
    section = str(text).split("Package-Blacklist", 1)[-1].split("};", 1)[0]
    return BLACKLIST_ENTRY.findall(section)


def security_upgrades(simulation, excluded_prefixes, origin_pattern="-security"):
    """`NAME=VERSION` for each installed package an `apt-get --simulate dist-upgrade` would upgrade from a security
    pocket, and CPU microcode from any pocket, without the excluded prefixes (the NVIDIA user-space stack). New
    packages (a new kernel's) are left to apt, which pulls them in with the meta package that needs them. Exact
    versions, so installing them is idempotent. Sorted, each once."""
    pins = set()
    for line in str(simulation).splitlines():
        match = INST_LINE.match(line)
        if not match or match.group("old") is None:
            continue
        name = match.group("name").split(":")[0]
        if name.startswith(tuple(excluded_prefixes)):
            continue
        if origin_pattern in match.group("origin") or name in MICROCODE_PACKAGES:
            pins.add(f"{name}={match.group('new')}")
    return sorted(pins)


def outdated_packages(names, installed, version):
    """The packages of `names` not installed at upstream `version` (Debian versions `VERSION-REVISION`), given
    `ansible_facts.packages`."""
    return [name for name in names
            if not any(str(entry.get("version", "")).startswith(f"{version}-") for entry in installed.get(name, []))]


def enabled_units(order, services):
    """The units of `order` that `ansible_facts.services` lists as enabled (or static), in that order."""
    return [unit for unit in order
            if str((services.get(unit) or {}).get("status", "")) in ("enabled", "enabled-runtime", "static")]


def health_table(hosts, hostvars, result_var="gpufleet_health"):
    """One line per node from each host's registered `gpu_health` result, aligned, unhealthy nodes first; a host
    without a result (unreachable, or failed before the check) is listed as such."""
    missing = {"healthy": False, "reason": "no result: unreachable, or the check could not run"}
    rows = [{"host": host, **(hostvars[host].get(result_var) or missing)} for host in hosts]
    rows = sorted(rows, key=lambda row: (bool(row.get("healthy")), str(row.get("host"))))
    header = ("NODE", "HEALTH", "CHECKED AT", "DETAIL")
    lines = [(str(r.get("host")), "ok" if r.get("healthy") else "FAIL", str(r.get("checked_at") or "-"),
              str(r.get("reason") or "all checks passed")) for r in rows]
    widths = [max(len(cells[i]) for cells in [header, *lines]) for i in range(3)]
    return ["  ".join(cells[i].ljust(widths[i]) for i in range(3)) + "  " + cells[3] for cells in [header, *lines]]


class FilterModule:
    def filters(self):
        return {"node_env": node_env, "apt_blacklist": apt_blacklist, "security_upgrades": security_upgrades,
                "outdated_packages": outdated_packages,
                "enabled_units": enabled_units,
                "health_table": health_table}
