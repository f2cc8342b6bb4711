"""YAML as the tests read it: PyYAML's safe loading, parsed by libyaml where PyYAML was built with it.

The tests parse the rendered cloud-configs hundreds of times a run; PyYAML's pure-Python reader spent about a tenth
of the default suite's CPU on that. `CSafeLoader` is the same safe constructor and resolver over libyaml's parser,
so the documents read the same. gpufleet's own code keeps the loaders it chose; only the tests' reading changes.
"""

from __future__ import annotations

from typing import Any

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(text: str | bytes) -> Any:
    """`yaml.safe_load(text)`, faster."""
    return yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader
