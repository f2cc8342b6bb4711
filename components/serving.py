"""The cloud-neutral half of `workload: inference`: the node's Triton config, the fleet's size bounds, the
endpoint outputs and the serving cost.

The per-cloud load balancer, health check and autoscaler live in `<cloud>/serving.py`; the rules in
`spec/inference_rules.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi

from gpufleet.cloud_init.triton import SYNC_IMAGES, TensorConfig, TritonConfig, TritonModel, WarmupConfig
from gpufleet.cloud_init.triton import UNIT as TRITON_UNIT

from .catalog.cost import NodePrices, hourly_cost
from .deploytime.containers import Pin, deferred_digest
from .spec.errors import raise_if
from .spec.inference import GRPC_PORT, HTTP_PORT, METRICS_PORT, InferenceSpec
from .spec.inference_rules import tensorrt_engines_fit_gpu, triton_supports_gpu
from .spec.triton import triton_image

if TYPE_CHECKING:
    from .catalog.selector import Selection

HEALTH_PATH = "/v2/health/ready"
TRITON_JOB = ("triton", METRICS_PORT)
# Seconds a node keeps serving after the load balancer stops sending it new requests, on top of which Triton
# waits for in-flight requests on SIGTERM.
DRAIN_MARGIN_SECONDS = 30
NODE_PUBLISHED_METRICS = ("gpu_utilization", "requests_per_node")


@dataclass(frozen=True)
class FleetSize:
    min_nodes: int
    max_nodes: int
    desired: int


def fleet_size(spec) -> FleetSize:
    """The group's bounds: fixed at `nodes` for training; the autoscaling range for inference."""
    scaling = spec.inference.autoscaling if spec.inference else None
    if scaling is None:
        return FleetSize(spec.nodes, spec.nodes, spec.nodes)
    return FleetSize(scaling.min_nodes, scaling.max_nodes, spec.nodes)


def _tensors(tensors) -> tuple[TensorConfig, ...]:
    return tuple(TensorConfig(t.name, t.data_type, tuple(t.dims)) for t in tensors)


def triton_config(selection: Selection, pin: Pin = deferred_digest) -> TritonConfig | None:
    """The node's Triton configuration, its containers pinned by digest with `pin`; raises `SpecError` for a
    TensorRT engine built for another GPU."""
    inference: InferenceSpec | None = selection.spec.inference
    if inference is None:
        return None
    raise_if([*triton_supports_gpu(selection), *tensorrt_engines_fit_gpu(selection)])
    models = tuple(TritonModel(
        name=m.name, platform=m.platform, max_batch_size=m.max_batch_size, instance_count=m.instance_count,
        preferred_batch_sizes=tuple(m.dynamic_batching.preferred_batch_sizes) if m.dynamic_batching else None,
        max_queue_delay_microseconds=m.dynamic_batching.max_queue_delay_microseconds if m.dynamic_batching else 0,
        inputs=_tensors(m.inputs), outputs=_tensors(m.outputs),
        warmup=WarmupConfig(m.warmup.batch_size, m.warmup.inputs == "random", m.warmup.count) if m.warmup else None,
    ) for m in inference.models)
    return TritonConfig(image=pin(triton_image(inference.triton_version, inference.triton_image_digest)),
                        sync_image=pin(SYNC_IMAGES[selection.spec.cloud]),
                        model_repository=inference.model_repository, models=models,
                        exit_timeout_seconds=inference.load_balancer.deregistration_delay_seconds + DRAIN_MARGIN_SECONDS,
                        scale_metric=published_metric(inference))


def published_metric(inference: InferenceSpec) -> str | None:
    """The autoscaling metric the nodes publish themselves (CPU is measured by every cloud without them)."""
    scaling = inference.autoscaling
    if scaling is None or scaling.target.metric not in NODE_PUBLISHED_METRICS:
        return None
    return scaling.target.metric


def serving_drain_command(selection: Selection) -> str | None:
    """On an interruption notice an inference node stops Triton, which fails readiness (the load balancer stops
    sending) and finishes in-flight requests; used unless the spec sets its own `node.spot.drain_command`."""
    spec = selection.spec
    if spec.inference is None or "node" in spec.model_fields_set and "spot" in spec.node.model_fields_set \
            and "drain_command" in spec.node.spot.model_fields_set:
        return None
    return f"systemctl stop {TRITON_UNIT}"


def listener_ports(inference: InferenceSpec) -> list[int]:
    return {"http": [HTTP_PORT], "grpc": [GRPC_PORT], "both": [HTTP_PORT, GRPC_PORT]}[inference.protocol]


def endpoint_outputs(host: pulumi.Input[str], inference: InferenceSpec, scheme: str = "http") -> dict[str, Any]:
    """The endpoint URL and the commands that check it and measure its latency."""
    host_output = pulumi.Output.from_input(host)
    url = host_output.apply(lambda h: f"{scheme}://{h}:{HTTP_PORT}")
    model = inference.models[0].name
    return {
        "inference_endpoint": url,
        "inference_grpc_endpoint": host_output.apply(lambda h: f"{h}:{GRPC_PORT}"),
        "inference_health_command": url.apply(lambda u: f"curl -fsS {u}{HEALTH_PATH}"),
        "inference_perf_command": host_output.apply(lambda h: (
            f"perf_analyzer -m {model} -u {h}:{GRPC_PORT} -i grpc --concurrency-range 1:16:2 "
            "--percentile=95 --measurement-interval 10000")),
    }


def serving_cost(selection: Selection) -> dict[str, Any] | None:
    """$/hour at the fleet's minimum and maximum, and $ per million requests at the stated throughput."""
    spec = selection.spec
    if spec.inference is None:
        return None
    size = fleet_size(spec)
    prices = selection.price
    rps = spec.inference.requests_per_second_per_node
    market, base = spec.market.type, spec.market.on_demand_base

    def hourly(nodes: int) -> float | None:
        value = hourly_cost(market, nodes, NodePrices(on_demand=prices.on_demand, spot=prices.spot), base)
        return None if value is None else round(value, 2)

    def per_million(nodes: int) -> float | None:
        value = hourly(nodes)
        return None if value is None or nodes == 0 else round(value / (nodes * rps * 3600) * 1_000_000, 4)

    return {
        "market": market,
        "min_nodes": size.min_nodes,
        "max_nodes": size.max_nodes,
        "usd_per_hour_at_min": hourly(size.min_nodes),
        "usd_per_hour_at_max": hourly(size.max_nodes),
        "requests_per_second_per_node": rps,
        "usd_per_million_requests": per_million(max(size.min_nodes, 1)),
        "assumption": f"{rps:g} requests/s per node, every node busy; set `inference.requests_per_second_per_node` "
                      "from a perf_analyzer run",
    }



def serving_outputs(selection: Selection, host: pulumi.Input[str]) -> dict[str, Any]:
    """Every inference output: endpoint, commands, serving cost. `inference_warnings` (a public output) is empty
    since Triton's tag is pinned by digest at `pulumi up` (it warned about the bare tag before)."""
    inference = selection.spec.inference
    scheme = "https" if inference.load_balancer.internet_facing else "http"
    return {**endpoint_outputs(host, inference, scheme), "inference_cost": serving_cost(selection),
            "inference_warnings": []}


def serving_cost_lines(cost: dict[str, Any]) -> list[str]:
    """The serving rows under the plan's cost table."""
    def money(value: float | None, digits: int = 2) -> str:
        return "n/a" if value is None else f"{value:,.{digits}f}"

    return [
        f"inference fleet ({cost['market']}): {cost['min_nodes']} nodes {money(cost['usd_per_hour_at_min'])} $/hour, "
        f"{cost['max_nodes']} nodes {money(cost['usd_per_hour_at_max'])} $/hour",
        f"$ per million requests: {money(cost['usd_per_million_requests'], 4)} at {cost['assumption']}",
    ]
