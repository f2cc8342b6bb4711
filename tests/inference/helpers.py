"""Inference specs for the tests: a small valid spec per cloud, changed one field at a time."""

from __future__ import annotations

import copy

from gpufleet.plan.stackfile import CLUSTER_KEY, read_stack_config

INFER_STACKS = ("aws-infer", "azure-infer", "gcp-infer")


def stack_spec(name: str) -> dict:
    return copy.deepcopy(read_stack_config(name)[CLUSTER_KEY])


def spec_for(cloud: str, **inference_changes) -> dict:
    spec = stack_spec(f"{cloud}-infer")
    spec["inference"].update(inference_changes)
    return spec


def model(**changes) -> dict:
    base = {"name": "m", "platform": "onnxruntime_onnx", "max_batch_size": 8,
            "inputs": [{"name": "x", "data_type": "TYPE_FP32", "dims": [4]}]}
    base.update(changes)
    return base
