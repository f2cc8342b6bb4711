"""`gpufleet migrate match` on mangled manifests: exit 0 or 2 with one message, never a traceback or exit 1."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.migrate.manifest import write_manifest
from gpufleet.plan.cli import main
from tests.migrate.manifests import manifest

from .conftest import examples, time_bound
from .test_fuzz_inputs import FUZZ_SETTINGS

pytestmark = pytest.mark.fuzz

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
                         st.sampled_from(["11.3", "cu113", "H100", "A100", "", "1.0+cu999", "-1", "NVIDIA"]))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(st.text(max_size=10), children, max_size=3)), max_leaves=8)


def _paths(value, prefix=()):
    """Every (path) into a JSON document, for replacing one value."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*prefix, index))


@settings(max_examples=examples(40), **FUZZ_SETTINGS)
@given(data=st.data())
def test_mangled_manifests_exit_0_or_2(capsys, tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz-migrate")
    path = folder / "manifest.json"
    write_manifest(manifest(data.draw(st.sampled_from(["a100-40gb", "t4", "rtx3090", None]))), path)
    document = json.loads(path.read_text())
    where = data.draw(st.sampled_from(list(_paths(document))[1:]))
    target = document
    for part in where[:-1]:
        target = target[part]
    target[where[-1]] = data.draw(JSON_VALUES)
    path.write_text(json.dumps(document))
    with time_bound(30):
        code = main(["migrate", "match", str(path), "--cloud", data.draw(st.sampled_from(["aws", "gcp", "azure"])),
                     "--region", "us-east-1", "--zone", "use1-az4", "--ssh-public-key", "/dev/null",
                     "--out", str(folder / "stack.yaml")])
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "internal error" not in err and "Traceback" not in err
