"""GCP rules: GPU VMs terminate on host maintenance, no restart for spot/compact, RoCE networks, SSH, Shielded VM."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from .common import ADMIN_PORTS, as_list, is_open, port_spec_hits, truthy
from .model import Finding, Resource

TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
REGION_TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
INSTANCE = "gcp:compute/instance:Instance"
FIREWALL = "gcp:compute/firewall:Firewall"
NETWORK = "gcp:compute/network:Network"
RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
VM_TYPES = (TEMPLATE, REGION_TEMPLATE, INSTANCE)
GPU_MACHINE = re.compile(r"^(a2|a3|a4|a4x|g2|g4)-", re.IGNORECASE)


def is_gpu_vm(resource: Resource) -> bool:
    if resource.type not in VM_TYPES:
        return False
    return bool(GPU_MACHINE.match(str(resource.props.get("machineType") or ""))) or bool(
        as_list(resource.props.get("guestAccelerators")))


def _scheduling(resource: Resource) -> dict:
    return resource.props.get("scheduling") or {}


def terminate_on_maintenance(resource: Resource, config: dict) -> Iterable[Finding]:
    if is_gpu_vm(resource) and _scheduling(resource).get("onHostMaintenance") != "TERMINATE":
        yield Finding("GPU VMs cannot live-migrate; onHostMaintenance is "
                      f"{_scheduling(resource).get('onHostMaintenance')!r}",
                      "set scheduling.onHostMaintenance: TERMINATE")


def spot_without_restart(resource: Resource, config: dict) -> Iterable[Finding]:
    scheduling = _scheduling(resource)
    if resource.type not in VM_TYPES:
        return
    spot = scheduling.get("provisioningModel") == "SPOT" or truthy(scheduling.get("preemptible"))
    if spot and scheduling.get("automaticRestart") is not False:
        yield Finding("spot VM with automatic restart (the API refuses it)", "set scheduling.automaticRestart: false")


def compact_without_restart(resources: list[Resource], config: dict):
    compact = {i for r in resources if r.type == RESOURCE_POLICY
               and (r.props.get("groupPlacementPolicy") or {}).get("collocation") == "COLLOCATED" for i in r.ids()}
    for vm in (r for r in resources if r.type in VM_TYPES):
        policies = as_list(vm.props.get("resourcePolicies"))
        hit = [p for p in policies if isinstance(p, str) and (p in compact or p.rsplit("/", 1)[-1] in compact)]
        if hit and _scheduling(vm).get("automaticRestart") is not False:
            yield vm, Finding(f"compact placement {hit[0].rsplit('/', 1)[-1]} with automatic restart (refused by "
                              "the API)", "set scheduling.automaticRestart: false")


def no_firewall_on_roce(resources: list[Resource], config: dict):
    roce = {i for r in resources if r.type == NETWORK and "roce" in str(r.props.get("networkProfile") or "").lower()
            for i in r.ids()}
    for rule in (r for r in resources if r.type == FIREWALL):
        network = rule.props.get("network")
        if network in roce or (isinstance(network, str) and network.rsplit("/", 1)[-1] in roce):
            yield rule, Finding(f"firewall rule on RoCE network {network}: firewall rules do not apply to RDMA NICs "
                                "and the API rejects them", "remove the rule; RoCE networks carry no firewall rules")


def no_open_ssh(resource: Resource, config: dict) -> Iterable[Finding]:
    if resource.type != FIREWALL or (resource.props.get("direction") or "INGRESS") != "INGRESS":
        return
    sources = [s for s in as_list(resource.props.get("sourceRanges")) if is_open(s)]
    if not sources:
        return
    for allow in as_list(resource.props.get("allows")):
        if not isinstance(allow, dict) or allow.get("protocol") not in ("tcp", "all"):
            continue
        hits = sorted({p for spec in as_list(allow.get("ports")) or ["*"] for p in port_spec_hits(spec, ADMIN_PORTS)})
        if hits:
            yield Finding(f"ingress from {', '.join(sources)} to port(s) {', '.join(map(str, hits))}",
                          "allow only your admin CIDRs, or use IAP (35.235.240.0/20) with OS Login")


def shielded_vm(resource: Resource, config: dict) -> Iterable[Finding]:
    if not is_gpu_vm(resource):
        return
    shielded = resource.props.get("shieldedInstanceConfig") or {}
    if not shielded or shielded.get("enableVtpm") is False or shielded.get("enableIntegrityMonitoring") is False:
        yield Finding("the GPU VM is not a Shielded VM (vTPM and integrity monitoring)",
                      "set shieldedInstanceConfig: {enableVtpm: true, enableIntegrityMonitoring: true, "
                      "enableSecureBoot: true}")


UNSIGNED_MODULE_MACHINES = frozenset({"a3-megagpu-8g"})
"""Where gpufleet turns Secure Boot off, and only under `gpudirect.allow_secure_boot_off`: GPUDirect-TCPXO's
dmabuf import helper is built on the node by DKMS and is not signed (README "GCP fabrics")."""


def secure_boot(resource: Resource, config: dict) -> Iterable[Finding]:
    if not is_gpu_vm(resource):
        return
    shielded = resource.props.get("shieldedInstanceConfig") or {}
    machine = str(resource.props.get("machineType") or "").rsplit("/", 1)[-1]
    if shielded and shielded.get("enableSecureBoot") is False and machine not in UNSIGNED_MODULE_MACHINES:
        yield Finding(f"Secure Boot is off on a {machine or 'GPU'} VM: unsigned kernel modules would load",
                      "set shieldedInstanceConfig.enableSecureBoot: true (gpufleet turns it off only on A3 Mega "
                      "nodes running GPUDirect-TCPXO, under gpudirect.allow_secure_boot_off)")


@cache
def reservation_only_machine_types() -> frozenset[str]:
    """GCP machine types the catalog marks as not sold on demand (`on_demand: reservation`: A4X, A4, A3 Ultra)."""
    from ..catalog.loader import load_catalog

    return frozenset(i.name for i in load_catalog().instances_of("gcp") if i.on_demand_needs_reservation)


def reservation_only_not_standard(resource: Resource, config: dict) -> Iterable[Finding]:
    if resource.type not in VM_TYPES:
        return
    machine = str(resource.props.get("machineType") or "").rsplit("/", 1)[-1]
    model = _scheduling(resource).get("provisioningModel") or "STANDARD"
    if machine in reservation_only_machine_types() and model == "STANDARD":
        yield Finding(f"{machine} is not sold on demand: a STANDARD VM of it never gets capacity",
                      "use provisioningModel SPOT, or RESERVATION_BOUND with a reservationAffinity naming the "
                      "future reservation")


PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
INSTANCE_ADMIN_ROLES = frozenset({"roles/compute.admin", "roles/compute.instanceAdmin", "roles/compute.instanceAdmin.v1"})
INSTANCE_WRITE = frozenset({"compute.instances.create", "compute.instances.delete"})


def instance_writers_scoped(resources: list[Resource], config: dict):
    """Who may create or delete instances project-wide (the Slurm controller's power programs) is held to named
    instances: a custom role with instances.create or delete is granted only under a `resource.name` condition, and
    Compute Engine's admin roles never project-wide."""
    writers = {str(r.props.get("roleId")) for r in resources if r.type == CUSTOM_ROLE
               and INSTANCE_WRITE & set(as_list(r.props.get("permissions")))}
    for member in (r for r in resources if r.type == PROJECT_MEMBER):
        role = str(member.props.get("role") or "")
        expression = str((member.props.get("condition") or {}).get("expression") or "")
        if role in INSTANCE_ADMIN_ROLES:
            yield member, Finding(f"{role} granted on the project: every instance in it may be created or deleted",
                                  "grant a custom role under a resource.name condition naming the cluster's "
                                  "instances")
        elif role.rsplit("/", 1)[-1] in writers and "resource.name" not in expression:
            yield member, Finding(f"{role} creates or deletes instances and is granted without a resource.name "
                                  "condition", "add a condition naming only the cluster's instances, disks and "
                                  "templates (gpufleet's elastic groups do)")
