"""gpufleet as a Pulumi component package: the three cluster components, hosted for any Pulumi language.

`pulumi package add <this repository>/components/provider` (or a local path to this folder) runs this folder as a
Python plugin (PulumiPlugin.yaml); its `__main__.py` calls `main()`, which serves the components through the
SDK's `component_provider_host`. The schema Pulumi generates SDKs from is inferred by the SDK's Analyzer from
`GpuClusterArgs` and the components' `pulumi.Output` annotations; `schema.json` here is that schema, checked in
and kept current by tests/test_package.py (regenerate with `python -m gpufleet.provider --write-schema`).
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

PACKAGE_NAME = "gpufleet"
SCHEMA_FILE = Path(__file__).with_name("schema.json")


def package_version() -> str:
    try:
        return version(PACKAGE_NAME)
    except PackageNotFoundError:  # pragma: no cover - running from a checkout that was never installed
        return "0.0.0"


def components() -> list[type]:
    from gpufleet import AwsGpuCluster, AzureGpuCluster, GcpGpuCluster
    return [AwsGpuCluster, AzureGpuCluster, GcpGpuCluster]


def schema() -> dict:
    """The package schema, as the host serves it (version fixed to 0.0.0 so the file does not churn)."""
    from pulumi.provider.experimental.component import ComponentProvider
    return json.loads(ComponentProvider(components(), PACKAGE_NAME, "0.0.0").schema)


def schema_text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    """Serves the components to the Pulumi engine (the engine passes its address on the command line)."""
    from pulumi.provider.experimental import component_provider_host
    component_provider_host(components(), name=PACKAGE_NAME, version=package_version())
