"""Rules for `workload: inference`, as plain functions a checking pipeline can call.

`INFERENCE_RULES` need only the spec; `selection_inference_problems` needs the catalog's choice (the GPU model).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from .errors import Problem
from .model import ClusterSpec
from .triton import TRITON_RELEASES, runs_on_branch, supports_architecture

if TYPE_CHECKING:
    from ..catalog.selector import Selection

REPOSITORY_SCHEMES = {"aws": "s3", "gcp": "gs"}
AZURE_BLOB_HOST = ".blob.core.windows.net"
EXAMPLE_REPOSITORY = {"aws": "s3://my-models/triton", "gcp": "gs://my-models/triton",
                      "azure": "https://myaccount.blob.core.windows.net/models/triton"}
# Autoscaling metrics each cloud can track without an agent on the node publishing custom metrics.
SUPPORTED_TARGETS = ("cpu_utilization",)


def inference_section_matches_workload(spec: ClusterSpec) -> list[Problem]:
    if spec.workload == "inference" and spec.inference is None:
        return [Problem("inference", None, "required with `workload: inference`: set `model_repository` and `models`")]
    if spec.workload == "training" and spec.inference is not None:
        return [Problem("workload", spec.workload, "set `workload: inference` to use the `inference` section")]
    return []


def model_repository_is_on_this_cloud(spec: ClusterSpec) -> list[Problem]:
    if spec.inference is None:
        return []
    uri = spec.inference.model_repository
    parsed = urlparse(uri)
    if spec.cloud == "azure":
        ok = (parsed.scheme == "https" and parsed.netloc.endswith(AZURE_BLOB_HOST)
              and parsed.path.strip("/") != "")
    else:
        ok = parsed.scheme == REPOSITORY_SCHEMES[spec.cloud] and parsed.netloc != ""
    if ok:
        return []
    return [Problem("inference.model_repository", uri, f"a model repository on {spec.cloud}, which the nodes read with "
                    f"their own identity, e.g. {EXAMPLE_REPOSITORY[spec.cloud]!r}")]


def batch_sizes_fit(spec: ClusterSpec) -> list[Problem]:
    if spec.inference is None:
        return []
    problems = []
    for i, model in enumerate(spec.inference.models):
        path = f"inference.models[{i}]"
        batching = model.dynamic_batching
        if batching is not None and model.max_batch_size == 0:
            problems.append(Problem(f"{path}.dynamic_batching", "set", "needs `max_batch_size` of at least 1"))
        for field in ("inputs", "outputs"):
            problems += [Problem(f"{path}.{field}[{j}].dims", t.dims, "each dimension -1 (variable) or at least 1")
                         for j, t in enumerate(getattr(model, field)) if any(d == 0 or d < -1 for d in t.dims)]
        for j, size in enumerate(batching.preferred_batch_sizes if batching else []):
            if size < 1 or size > model.max_batch_size:
                problems.append(Problem(f"{path}.dynamic_batching.preferred_batch_sizes[{j}]", size,
                                        f"between 1 and `max_batch_size` ({model.max_batch_size}); raise "
                                        "`max_batch_size` or lower the preferred size"))
        if model.warmup is not None:
            if not model.inputs:
                problems.append(Problem(f"{path}.inputs", [], "warm-up requests are built from the inputs; list "
                                        "each input's `name`, `data_type` and `dims`"))
            problems += [Problem(f"{path}.inputs[{j}].dims", t.dims, "fixed sizes (no -1) with `warmup`: Triton builds "
                                 "warm-up tensors of exactly this shape") for j, t in enumerate(model.inputs) if -1 in t.dims]
            if model.warmup.batch_size > max(model.max_batch_size, 1):
                problems.append(Problem(f"{path}.warmup.batch_size", model.warmup.batch_size,
                                        f"at most `max_batch_size` ({max(model.max_batch_size, 1)})"))
        if model.platform == "pytorch_libtorch":
            problems += [Problem(f"{path}.{field}", [], f"required for `pytorch_libtorch`: Triton cannot read a "
                                 f"TorchScript model's {field} from the file; list each one's `name`, `data_type`, `dims`")
                         for field in ("inputs", "outputs") if not getattr(model, field)]
        if model.platform == "tensorrt_plan" and model.built_for_gpu is None:
            problems.append(Problem(f"{path}.built_for_gpu", None, "required for `tensorrt_plan`: a TensorRT engine "
                                    "runs only on the GPU model (and TensorRT version) it was built with"))
    return problems


def triton_runs_on_driver(spec: ClusterSpec) -> list[Problem]:
    if spec.inference is None:
        return []
    version, branch = spec.inference.triton_version, int(spec.node.driver.branch)
    release = TRITON_RELEASES.get(version)
    if release is None:
        return [Problem("inference.triton_version", version, f"one of {', '.join(TRITON_RELEASES)} (the releases "
                        "whose driver requirements gpufleet knows, from NVIDIA's Triton release notes)")]
    if runs_on_branch(version, branch):
        return []
    fits = [v for v in TRITON_RELEASES if runs_on_branch(v, branch)]
    return [Problem("inference.triton_version", version, f"Triton {version} (CUDA {release.cuda}) needs driver "
                    f"R{release.native_min}+ or one of R{', R'.join(map(str, release.forward_compatible))}, and "
                    f"`node.driver.branch` is {branch} ({release.source}); use "
                    f"{' or '.join(fits) if fits else 'a newer driver branch'}")]


def autoscaling_bounds(spec: ClusterSpec) -> list[Problem]:
    scaling = spec.inference.autoscaling if spec.inference else None
    if scaling is None:
        return []
    problems = []
    if scaling.min_nodes > scaling.max_nodes:
        problems.append(Problem("inference.autoscaling.min_nodes", scaling.min_nodes,
                                f"at most `max_nodes` ({scaling.max_nodes})"))
    elif not scaling.min_nodes <= spec.nodes <= scaling.max_nodes:
        problems.append(Problem("nodes", spec.nodes, f"the starting size, between `inference.autoscaling.min_nodes` "
                                f"({scaling.min_nodes}) and `max_nodes` ({scaling.max_nodes})"))
    if scaling.target.metric not in SUPPORTED_TARGETS:
        problems.append(Problem("inference.autoscaling.target.metric", scaling.target.metric,
                                f"one of {', '.join(SUPPORTED_TARGETS)}: gpufleet does not yet publish a per-node GPU "
                                "or request-count metric that every cloud's autoscaler can track"))
    elif scaling.target.value > 100:
        problems.append(Problem("inference.autoscaling.target.value", scaling.target.value, "a percentage, 1 to 100"))
    return problems


def spot_keeps_serving(spec: ClusterSpec) -> list[Problem]:
    """A spot-only fleet can lose every node at once; refuse it unless on-demand nodes keep serving."""
    if spec.inference is None or spec.market.type == "on-demand":
        return []
    floor = spec.market.on_demand_base if spec.market.type == "mixed" else 0
    if floor >= 1:
        return []
    return [Problem("market", spec.market.type, "an inference fleet on spot alone can go to 0 nodes during an "
                    "interruption; use `market: on-demand` (the default), or `market: {type: mixed, on_demand_base: "
                    "1}` or more")]


def load_balancer_exposure(spec: ClusterSpec) -> list[Problem]:
    if spec.inference is None:
        return []
    lb = spec.inference.load_balancer
    problems = []
    if lb.internet_facing and spec.cloud != "aws":
        problems.append(Problem("inference.load_balancer.internet_facing", True,
                                f"only on aws for now; on {spec.cloud} the endpoint is internal"))
    elif lb.internet_facing and lb.tls_certificate_arn is None:
        problems.append(Problem("inference.load_balancer.tls_certificate_arn", None, "required with "
                                "`internet_facing: true`: a public endpoint serves TLS only (an ACM certificate ARN)"))
    if lb.internet_facing and spec.network.existing_subnet_id:
        problems.append(Problem("inference.load_balancer.internet_facing", True, "needs the public subnet gpufleet "
                                "creates; with `network.existing_subnet_id` the endpoint is internal"))
    if lb.tls_certificate_arn is not None and not lb.internet_facing:
        problems.append(Problem("inference.load_balancer.tls_certificate_arn", lb.tls_certificate_arn,
                                "only with `internet_facing: true`"))
    for i, cidr in enumerate(lb.client_cidrs):
        if cidr in ("0.0.0.0/0", "*") and not lb.internet_facing:
            problems.append(Problem(f"inference.load_balancer.client_cidrs[{i}]", cidr,
                                    "your clients' CIDRs; 0.0.0.0/0 needs `internet_facing: true`"))
    return problems


def triton_runs_in_docker(spec: ClusterSpec) -> list[Problem]:
    if spec.workload == "inference" and spec.node.container_runtime != "docker":
        return [Problem("node.container_runtime", spec.node.container_runtime, "'docker' for `workload: inference` "
                        "(the Triton unit runs the NGC container with `docker run --gpus all`)")]
    return []


def azure_repository_access(spec: ClusterSpec) -> list[Problem]:
    if spec.inference is None:
        return []
    group = spec.inference.repository_resource_group
    if spec.cloud == "azure" and group is None:
        return [Problem("inference.repository_resource_group", None, "required on azure: the resource group of the "
                        "storage account, where the stack grants the nodes Storage Blob Data Reader on the container")]
    if spec.cloud != "azure" and group is not None:
        return [Problem("inference.repository_resource_group", group, "only applies on azure")]
    if spec.cloud == "azure" and spec.market.type == "mixed":
        return [Problem("market", "mixed", "on azure an inference fleet is one autoscaled scale set; use "
                        "`market: on-demand`")]
    return []


def no_rdma_for_inference(spec: ClusterSpec) -> list[Problem]:
    if spec.workload == "inference" and spec.fabric not in ("auto", "tcp"):
        return [Problem("fabric", spec.fabric, "an inference fleet serves over TCP; use `fabric: tcp` (the default "
                        "for `workload: inference`)")]
    return []


INFERENCE_RULES: tuple[Callable[[ClusterSpec], list[Problem]], ...] = (
    inference_section_matches_workload,
    model_repository_is_on_this_cloud,
    batch_sizes_fit,
    triton_runs_on_driver,
    autoscaling_bounds,
    spot_keeps_serving,
    load_balancer_exposure,
    no_rdma_for_inference,
    triton_runs_in_docker,
    azure_repository_access,
)


def triton_supports_gpu(selection: Selection) -> list[Problem]:
    spec = selection.spec
    if spec.inference is None or spec.inference.triton_version not in TRITON_RELEASES:
        return []
    version, architecture = spec.inference.triton_version, selection.gpu.architecture
    if supports_architecture(version, architecture):
        return []
    fits = [v for v in TRITON_RELEASES if supports_architecture(v, architecture)]
    return [Problem("inference.triton_version", version, f"Triton {version} does not support {selection.gpu.model} "
                    f"({architecture}; NVIDIA's release notes, GPU Requirements); use "
                    f"{' or '.join(fits) if fits else 'a newer GPU'}")]


def tensorrt_engines_fit_gpu(selection: Selection) -> list[Problem]:
    spec = selection.spec
    if spec.inference is None:
        return []
    gpu = selection.gpu.model
    return [Problem(f"inference.models[{i}].built_for_gpu", model.built_for_gpu,
                    f"{gpu!r}, the nodes' GPU: a TensorRT engine built on another GPU does not load; rebuild it "
                    f"on {gpu} with the TensorRT of Triton {spec.inference.triton_version}")
            for i, model in enumerate(spec.inference.models)
            if model.platform == "tensorrt_plan" and model.built_for_gpu is not None
            and model.built_for_gpu.upper() != gpu.upper()]

