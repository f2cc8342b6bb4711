"""The README's spec reference is the generated one: docs cannot drift from the model (R15)."""

from pathlib import Path

from gpufleet.spec.reference import reference_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_spec_reference_is_current():
    assert reference_table() in README.read_text(), (
        "README.md spec reference is stale: regenerate it with `.venv/bin/python -m gpufleet.spec.reference`")
