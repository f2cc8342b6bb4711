"""Every config.pbtxt gpufleet writes parses with Triton's own model_config.proto (from tritonclient), and carries
the batching, instance groups and warm-up of the spec."""

from __future__ import annotations

import os

import pytest

from gpufleet.boot import user_data_for
from gpufleet.catalog.selector import select
from gpufleet.cloud_init.triton import CONFIG_DIR, TensorConfig, TritonModel, WarmupConfig, config_pbtxt
from gpufleet.spec import parse_cluster_spec
from tests.yaml_reader import read_yaml

from .helpers import INFER_STACKS, model, spec_for, stack_spec


def triton_proto():
    """Triton's ModelConfig message and protobuf's text_format; skips locally, fails in CI, without tritonclient."""
    try:
        from google.protobuf import text_format
        from tritonclient.grpc import model_config_pb2
    except ImportError:
        message = "tritonclient is not installed; `pip install -r requirements-dev.txt`"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (required in CI)")
        pytest.skip(message)
    return model_config_pb2.ModelConfig, text_format


def parse(text: str):
    message, text_format = triton_proto()
    return text_format.Parse(text, message())


def configs_in(user_data: str) -> dict[str, str]:
    files = read_yaml(user_data)["write_files"]
    return {f["path"]: f["content"] for f in files if f["path"].startswith(CONFIG_DIR)}


@pytest.mark.parametrize("stack", INFER_STACKS)
def test_every_shipped_config_parses_with_tritons_proto(stack):
    spec = parse_cluster_spec(stack_spec(stack))
    configs = configs_in(user_data_for(select(spec), "gpufleet"))
    assert sorted(configs) == [f"{CONFIG_DIR}/{m.name}/config.pbtxt" for m in spec.inference.models]
    for (_, text), wanted in zip(sorted(configs.items()), spec.inference.models, strict=True):
        config = parse(text)
        assert config.name == wanted.name and config.platform == wanted.platform
        assert config.max_batch_size == wanted.max_batch_size
        assert list(config.dynamic_batching.preferred_batch_size) == wanted.dynamic_batching.preferred_batch_sizes
        assert config.dynamic_batching.max_queue_delay_microseconds == wanted.dynamic_batching.max_queue_delay_microseconds
        group = config.instance_group[0]
        assert (group.count, group.kind) == (wanted.instance_count, group.KIND_GPU)
        warmup = config.model_warmup[0]
        assert (warmup.batch_size, warmup.count) == (wanted.warmup.batch_size, wanted.warmup.count)
        assert warmup.inputs["input"].random_data and list(warmup.inputs["input"].dims) == [3, 224, 224]


MODELS = {
    "tensorrt, no batching": TritonModel("trt", "tensorrt_plan", 0, 1),
    "onnx, default preferred sizes": TritonModel("onnx", "onnxruntime_onnx", 16, 3, (), 50),
    "pytorch with outputs and zero warm-up": TritonModel(
        "torch", "pytorch_libtorch", 4, 1, (2, 4), 100, (TensorConfig("INPUT__0", "TYPE_FP16", (3, -1)),),
        (TensorConfig("OUTPUT__0", "TYPE_FP16", (1000,)),), None),
    "python backend, string input, warm-up": TritonModel(
        "py", "python", 8, 2, (8,), 0, (TensorConfig("text", "TYPE_INT64", (128,)),), (), WarmupConfig(4, False, 2)),
}


@pytest.mark.parametrize("case", MODELS, ids=list(MODELS))
def test_config_shapes_parse(case):
    triton = MODELS[case]
    config = parse(config_pbtxt(triton))
    assert config.max_batch_size == triton.max_batch_size
    assert config.HasField("dynamic_batching") == (triton.preferred_batch_sizes is not None)
    if triton.platform == "python":
        assert config.backend == "python" and config.platform == ""
        assert config.model_warmup[0].inputs["text"].zero_data
    assert [(t.name, list(t.dims)) for t in config.input] == [(t.name, list(t.dims)) for t in triton.inputs]


def test_the_proto_refuses_a_field_triton_does_not_know():
    _, text_format = triton_proto()
    with pytest.raises(text_format.ParseError):
        parse(config_pbtxt(MODELS["tensorrt, no batching"]) + "dynamic_batching { preferred_batch_sizes: [ 4 ] }\n")


def test_a_spec_model_with_every_option_parses():
    spec = spec_for("gcp", models=[model(name="a", dynamic_batching={"preferred_batch_sizes": [2, 8]},
                                         warmup={"batch_size": 2, "inputs": "zero", "count": 5}, instance_count=4),
                                   model(name="b", platform="python", max_batch_size=0)])
    configs = configs_in(user_data_for(select(parse_cluster_spec(spec)), "gpufleet"))
    a, b = (parse(configs[f"{CONFIG_DIR}/{name}/config.pbtxt"]) for name in ("a", "b"))
    assert list(a.dynamic_batching.preferred_batch_size) == [2, 8] and a.instance_group[0].count == 4
    assert a.model_warmup[0].count == 5 and a.model_warmup[0].inputs["x"].zero_data
    assert b.backend == "python" and b.max_batch_size == 0 and not b.HasField("dynamic_batching")
