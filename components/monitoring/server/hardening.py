"""systemd drop-ins: each service gets a read-only system, its own writable state, and no way to gain privilege.

Applied to the Ubuntu packages' own units (prometheus, prometheus-alertmanager, grafana-server) as drop-ins, so a
package upgrade keeps them. Listen addresses are set here too, so no service answers on the private address.
"""

from __future__ import annotations

from . import paths

COMMON = """NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
CapabilityBoundingSet=
AmbientCapabilities=
"""

WRITABLE = {
    "prometheus": [paths.PROMETHEUS_DATA],
    "prometheus-alertmanager": [paths.ALERTMANAGER_DATA],
    "grafana-server": ["/var/lib/grafana", "/var/log/grafana"],
}

GRAFANA_ENVIRONMENT = {
    "GF_SERVER_HTTP_ADDR": paths.GRAFANA_ADDR,
    "GF_SERVER_HTTP_PORT": str(paths.GRAFANA_PORT),
    "GF_AUTH_ANONYMOUS_ENABLED": "false",
    "GF_USERS_ALLOW_SIGN_UP": "false",
    "GF_SECURITY_ADMIN_USER": "admin",
    # Grafana expands $__file{} in values after applying GF_* overrides (pkg/setting/setting.go, expandConfig);
    # the `__FILE` suffix is only a feature of the Docker image's entrypoint.
    "GF_SECURITY_ADMIN_PASSWORD": f"$__file{{{paths.GRAFANA_ADMIN_PASSWORD}}}",
    "GF_SECURITY_DISABLE_GRAVATAR": "true",
    "GF_SECURITY_COOKIE_SAMESITE": "strict",
    "GF_ANALYTICS_REPORTING_ENABLED": "false",
    "GF_ANALYTICS_CHECK_FOR_UPDATES": "false",
    "GF_PLUGINS_PLUGIN_ADMIN_ENABLED": "false",
}


def drop_in(service: str) -> str:
    """/etc/systemd/system/<service>.service.d/gpufleet.conf."""
    lines = ["[Unit]", "After=gpufleet-monitoring-setup.service", "", "[Service]", COMMON.rstrip("\n"),
             *(f"ReadWritePaths=-{path}" for path in WRITABLE[service])]
    if service == "grafana-server":
        lines += [f"Environment={key}={value}" for key, value in GRAFANA_ENVIRONMENT.items()]
    return "\n".join(lines) + "\n"
