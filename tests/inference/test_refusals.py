"""Bad inference input is refused before anything is declared, with one message naming each field."""

from __future__ import annotations

import pytest

from gpufleet.spec import SpecError, parse_cluster_spec
from tests.conftest import refusal

from .helpers import model, spec_for, stack_spec


def problems(spec: dict) -> str:
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec(spec)
    return str(caught.value)


def test_max_batch_size_below_a_preferred_batch_size():
    message = refusal(spec_for("aws", models=[model(max_batch_size=4, dynamic_batching={"preferred_batch_sizes": [2, 8]})]))
    assert "`inference.models[0].dynamic_batching.preferred_batch_sizes[1]`: got 8" in message
    assert "`max_batch_size` (4)" in message


def test_unknown_platform():
    message = refusal(spec_for("gcp", models=[model(platform="tensorflow_savedmodel")]))
    assert "`inference.models[0].platform`: got 'tensorflow_savedmodel'" in message
    assert "'onnxruntime_onnx'" in message


def test_a_triton_release_the_driver_cannot_run():
    spec = spec_for("aws", triton_version="25.08")
    spec["node"] = {"driver": {"branch": "570"}}
    message = problems(spec)
    assert "`inference.triton_version`: got '25.08'" in message
    assert "needs driver R575+" in message and "`node.driver.branch` is 570" in message and "rel-25-08.html" in message


def test_an_unknown_triton_release():
    message = problems(spec_for("azure", triton_version="21.01"))
    assert "`inference.triton_version`: got '21.01'" in message and "25.08" in message


@pytest.mark.parametrize("cloud,uri", [("aws", "gs://models/triton"), ("gcp", "s3://models/triton"),
                                       ("azure", "s3://models/triton"), ("azure", "https://example.com/models"),
                                       ("aws", "s3://")])
def test_a_model_repository_of_another_cloud(cloud, uri):
    message = problems(spec_for(cloud, model_repository=uri))
    assert f"`inference.model_repository`: got '{uri}'" in message and f"a model repository on {cloud}" in message


def test_spot_alone_can_drop_to_zero_nodes():
    spec = spec_for("aws")
    spec["market"] = "spot"
    assert "`market`: got 'spot'" in problems(spec)
    spec["market"] = {"type": "mixed", "on_demand_base": 1}
    parse_cluster_spec(spec)


def test_internet_facing_needs_aws_and_a_certificate():
    assert "`inference.load_balancer.tls_certificate_arn`: got None" in problems(
        spec_for("aws", load_balancer={"internet_facing": True}))
    assert "only on aws" in problems(spec_for("gcp", load_balancer={"internet_facing": True}))
    assert "`inference.load_balancer.client_cidrs[0]`" in problems(spec_for("aws", load_balancer={"client_cidrs": ["0.0.0.0/0"]}))


def test_tensorrt_engine_for_another_gpu():
    message = refusal(spec_for("aws", models=[model(platform="tensorrt_plan", built_for_gpu="A100")]))
    assert "`inference.models[0].built_for_gpu`: got 'A100'" in message and "'L4'" in message
    assert "`inference.models[0].built_for_gpu`: got None" in problems(spec_for("aws", models=[model(platform="tensorrt_plan")]))


def test_warmup_needs_fixed_input_shapes():
    message = problems(spec_for("gcp", models=[model(warmup={"batch_size": 1}, inputs=[
        {"name": "x", "data_type": "TYPE_FP32", "dims": [-1, 4]}])]))
    assert "`inference.models[0].inputs[0].dims`: got [-1, 4]" in message
    assert "`inference.models[0].inputs`: got []" in problems(spec_for("gcp", models=[model(warmup={}, inputs=[])]))


def test_autoscaling_bounds_and_metric():
    assert "`inference.autoscaling.min_nodes`: got 5" in problems(spec_for("aws", autoscaling={"min_nodes": 5, "max_nodes": 3}))
    assert "`nodes`: got 2" in problems(spec_for("aws", autoscaling={"min_nodes": 3, "max_nodes": 8}))
    assert "`inference.autoscaling.target.metric`: got 'gpu_utilization'" in problems(spec_for(
        "aws", autoscaling={"min_nodes": 2, "max_nodes": 8, "target": {"metric": "gpu_utilization"}}))


def test_pytorch_needs_declared_outputs_and_azure_needs_the_storage_group():
    assert "`inference.models[0].outputs`: got []" in problems(spec_for("gcp", models=[model(platform="pytorch_libtorch")]))
    assert "`inference.repository_resource_group`: got None" in problems(spec_for("azure", repository_resource_group=None))


def test_the_section_and_the_workload_go_together():
    spec = stack_spec("aws-infer")
    del spec["workload"]
    assert "`workload`: got 'training'" in problems(spec)
    spec = stack_spec("aws-infer")
    del spec["inference"]
    assert "`inference`: got None" in problems(spec)


def test_inference_defaults_to_tcp_without_placement_and_refuses_rdma():
    spec = parse_cluster_spec(stack_spec("aws-infer"))
    assert (spec.fabric, spec.placement_group, spec.market.type) == ("tcp", False, "on-demand")
    raw = stack_spec("aws-infer")
    raw["fabric"] = "efa"
    assert "`fabric`: got 'efa'" in problems(raw)


def test_the_compatibility_table_follows_the_release_notes():
    from gpufleet.spec.triton import TRITON_RELEASES, runs_on_branch
    assert runs_on_branch("25.08", 580) and runs_on_branch("25.08", 535) and not runs_on_branch("25.08", 570)
    assert runs_on_branch("23.12", 535) and not runs_on_branch("23.12", 530)
    for version, release in TRITON_RELEASES.items():
        assert release.source.endswith(f"rel-{version.replace('.', '-')}.html")
        assert all(branch < release.native_min for branch in release.forward_compatible)


def test_a_triton_release_that_does_not_support_the_gpu():
    from types import SimpleNamespace

    from gpufleet.spec.inference_rules import triton_supports_gpu
    spec = parse_cluster_spec(spec_for("aws"))
    volta = SimpleNamespace(spec=spec, gpu=SimpleNamespace(model="V100", architecture="volta"))
    [problem] = triton_supports_gpu(volta)
    assert problem.path == "inference.triton_version" and "23.08 or 23.12" in problem.expected
    assert triton_supports_gpu(SimpleNamespace(spec=spec, gpu=SimpleNamespace(model="L4", architecture="ada"))) == []


def test_an_unquoted_triton_version_is_refused_with_a_hint():
    message = problems(spec_for("gcp", triton_version=25.1))
    assert "`inference.triton_version`: got 25.1" in message and 'quoted release like "25.08"' in message
