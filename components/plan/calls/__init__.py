"""Answers to provider invokes for offline plans, keyed by token; one module per cloud, keys in camelCase."""

from . import aws, azure, gcp

CALLS = {**aws.CALLS, **azure.CALLS, **gcp.CALLS}
