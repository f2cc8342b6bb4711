"""`workload: inference` on Azure: an internal Standard Load Balancer in front of the scale set, and autoscale.

- The frontend is a private address in the cluster subnet; there is no public IP.
- The probe is HTTP GET /v2/health/ready on 8000 (Triton's readiness: models loaded and warmed), so a node joins
  the rotation only after warm-up. Azure's load balancer has no deregistration delay: on scale-in the scale set's
  Terminate notice (5 minutes) lets systemd stop Triton, which finishes in-flight requests for
  `deregistration_delay_seconds` while the failing probe takes the node out of rotation.
- Autoscale (Microsoft.Insights autoscale settings) on the scale set's host CPU: out by one above the target, in
  by one 20 points below it, with a cool-down covering boot plus model load.
- The nodes' system-assigned identity gets Storage Blob Data Reader on the repository's container only.
- NSG: the load balancer's probe (service tag AzureLoadBalancer) to 8000, the virtual network and
  `load_balancer.client_cidrs` to the listener ports, ahead of gpufleet's deny-all.
"""

from __future__ import annotations

from urllib.parse import urlparse

import pulumi
import pulumi_azure_native as azure_native

from ..serving import HEALTH_PATH, fleet_size, listener_ports
from ..spec import ClusterSpec
from ..spec.inference import HTTP_PORT
from .network import node_subnet_cidr
from .tagging import Tagger

network = azure_native.network
POOL, FRONTEND, PROBE = "triton", "frontend", "triton-ready"
BLOB_DATA_READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"  # built-in role "Storage Blob Data Reader"
BOOT_MINUTES = 10
SCALE_IN_GAP = 20
PRIORITY = {"triton-probe": 140, "triton-clients": 150}


def serving_nsg_rules(spec: ClusterSpec, nodes: list[dict]) -> list[dict]:
    """NSG rules (SecurityRuleArgs keyword arguments) that let the probe and the clients reach Triton."""
    if spec.inference is None:
        return []
    ports = [str(p) for p in listener_ports(spec.inference)]
    clients = ["VirtualNetwork", *spec.inference.load_balancer.client_cidrs]
    common = {"direction": "Inbound", "access": "Allow", "protocol": "Tcp", "source_port_range": "*",
              "destination_application_security_groups": nodes}
    return [
        {"name": "allow-triton-probe", "priority": PRIORITY["triton-probe"], "source_address_prefix": "AzureLoadBalancer",
         "destination_port_range": str(HTTP_PORT), **common},
        {"name": "allow-triton-clients", "priority": PRIORITY["triton-clients"], "source_address_prefixes": clients,
         "destination_port_ranges": ports, **common},
    ]


def frontend_address(spec: ClusterSpec) -> str | None:
    """A fixed frontend address at the top of the subnet gpufleet creates (nodes are given addresses from the
    bottom), so the endpoint is known at plan time; None in an existing subnet, where Azure picks one."""
    if spec.network.existing_subnet_id:
        return None
    subnet = node_subnet_cidr(spec.network.cidr)
    return str(subnet.broadcast_address - 2)  # Azure reserves the last address of a subnet


def _child_id(lb_id: pulumi.Output[str], kind: str, name: str) -> pulumi.Output[str]:
    return pulumi.Output.concat(lb_id, f"/{kind}/{name}")


def load_balancer_args(spec: ClusterSpec, lb_id: pulumi.Output[str], subnet_id: pulumi.Input[str]) -> dict:
    """The load balancer's frontend, pool, probe and one rule per Triton port; `lb_id` is its own (computed) id."""
    address = frontend_address(spec)
    frontend = {"name": FRONTEND, "subnet": {"id": subnet_id}, "private_ip_allocation_method": "Static" if address
                else "Dynamic", **({"private_ip_address": address} if address else {})}
    if spec.zone:
        frontend["zones"] = [spec.zone]
    return {
        "sku": {"name": "Standard", "tier": "Regional"},
        "frontend_ip_configurations": [frontend],
        "backend_address_pools": [{"name": POOL}],
        "probes": [{"name": PROBE, "protocol": "Http", "port": HTTP_PORT, "request_path": HEALTH_PATH,
                    "interval_in_seconds": 5, "probe_threshold": 2}],
        "load_balancing_rules": [{
            "name": f"triton-{port}", "protocol": "Tcp", "frontend_port": port, "backend_port": port,
            "frontend_ip_configuration": {"id": _child_id(lb_id, "frontendIPConfigurations", FRONTEND)},
            "backend_address_pool": {"id": _child_id(lb_id, "backendAddressPools", POOL)},
            "probe": {"id": _child_id(lb_id, "probes", PROBE)},
            "enable_tcp_reset": True, "idle_timeout_in_minutes": 4,
        } for port in listener_ports(spec.inference)],
    }


def autoscale_profile(spec: ClusterSpec, scale_set_id: pulumi.Input[str]) -> dict | None:
    scaling = spec.inference.autoscaling if spec.inference else None
    if scaling is None:
        return None
    size = fleet_size(spec)
    cooldown = f"PT{BOOT_MINUTES + -(-spec.inference.model_load_seconds // 60)}M"
    target = scaling.target.value

    def rule(direction: str, operator: str, threshold: float) -> dict:
        return {"metric_trigger": {"metric_name": "Percentage CPU", "metric_resource_uri": scale_set_id,
                                   "operator": operator, "statistic": "Average", "threshold": threshold,
                                   "time_aggregation": "Average", "time_grain": "PT1M", "time_window": "PT5M"},
                "scale_action": {"direction": direction, "type": "ChangeCount", "value": "1", "cooldown": cooldown}}

    return {"name": "triton", "capacity": {"minimum": str(size.min_nodes), "maximum": str(size.max_nodes),
                                           "default": str(size.desired)},
            "rules": [rule("Increase", "GreaterThan", target), rule("Decrease", "LessThan", max(target - SCALE_IN_GAP, 5))]}


def container_scope(spec: ClusterSpec, subscription_id: pulumi.Input[str]) -> pulumi.Output[str]:
    """The repository's blob container as an ARM scope: the narrowest a role assignment can name here."""
    parsed = urlparse(spec.inference.model_repository)
    account = parsed.netloc.split(".", 1)[0]
    container = parsed.path.strip("/").split("/", 1)[0]
    group = spec.inference.repository_resource_group
    return pulumi.Output.concat("/subscriptions/", subscription_id, f"/resourceGroups/{group}/providers/"
                                f"Microsoft.Storage/storageAccounts/{account}/blobServices/default/containers/{container}")


def build_load_balancer(name: str, spec: ClusterSpec, resource_group: pulumi.Input[str], subnet_id: pulumi.Input[str],
                        subscription_id: pulumi.Input[str], tag: Tagger,
                        opts: pulumi.ResourceOptions) -> tuple[network.LoadBalancer, pulumi.Output[str]]:
    """The load balancer and its backend pool id, which the scale set's NIC joins."""
    lb_name = f"{name}-lb"
    lb_id = pulumi.Output.concat("/subscriptions/", subscription_id, "/resourceGroups/", resource_group,
                                 f"/providers/Microsoft.Network/loadBalancers/{lb_name}")
    balancer = network.LoadBalancer(lb_name, load_balancer_name=lb_name, resource_group_name=resource_group,
                                    location=spec.region, tags=tag("lb"), opts=opts,
                                    **load_balancer_args(spec, lb_id, subnet_id))
    return balancer, _child_id(balancer.id, "backendAddressPools", POOL)


def build_autoscale(name: str, spec: ClusterSpec, resource_group: pulumi.Input[str],
                    scale_set: azure_native.compute.VirtualMachineScaleSet, subscription_id: pulumi.Input[str],
                    tag: Tagger, opts: pulumi.ResourceOptions) -> None:
    profile = autoscale_profile(spec, scale_set.id)
    if profile is not None:
        azure_native.monitor.AutoscaleSetting(
            f"{name}-autoscale", resource_group_name=resource_group, location=spec.region, enabled=True,
            target_resource_uri=scale_set.id, profiles=[profile], tags=tag("autoscale"), opts=opts)
    azure_native.authorization.RoleAssignment(
        f"{name}-models-reader", scope=container_scope(spec, subscription_id), principal_type="ServicePrincipal",
        principal_id=scale_set.identity.apply(lambda identity: identity.principal_id if identity else None),
        role_definition_id=pulumi.Output.concat("/subscriptions/", subscription_id,
                                                f"/providers/Microsoft.Authorization/roleDefinitions/{BLOB_DATA_READER}"),
        opts=opts)


def scale_set_ignore_changes(spec: ClusterSpec) -> list[str]:
    """Autoscale owns an autoscaled scale set's capacity; `pulumi up` must not reset it."""
    return ["sku.capacity"] if spec.inference is not None and spec.inference.autoscaling else []
