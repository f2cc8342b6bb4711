"""Property tests (issue 10, item 2): random structured junk into the spec parser and the whole checking pipeline
(catalog selection included) raises only `SpecError`; plausible mutations of the shipped stacks through the whole
`gpufleet plan` CLI exit 0 or 2, within a time bound per case, and never print a traceback."""

from __future__ import annotations

import datetime
import json
import math
import os

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufleet.catalog.selector import select
from gpufleet.pipeline import check_cluster_input
from gpufleet.plan.cli import _check_cluster_value, main
from gpufleet.plan.project import find_project
from gpufleet.plan.stackfile import stack_names
from gpufleet.spec import SpecError, parse_cluster_spec
from gpufleet.spec.reference import reference_rows
from tests.spec.test_section_messages import BASE as INFERENCE_BASE
from tests.spec.test_section_messages import sections

from .conftest import examples, time_bound

pytestmark = pytest.mark.fuzz

FIELDS = [path for path, _, _ in reference_rows()]
BASE = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2,
        "accelerator": {"instance_type": "p5.48xlarge"}}
# Deterministic in CI; benchmarks/fuzz_inputs.py sets GPUFLEET_FUZZ_RANDOM=1 to draw new inputs on each run.
FUZZ_SETTINGS = dict(derandomize=os.environ.get("GPUFLEET_FUZZ_RANDOM") != "1", deadline=None, database=None, print_blob=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                            HealthCheck.function_scoped_fixture])

# YAML can build all of these; JSON only some. Each must end as a SpecError, never another exception.
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
    st.sampled_from(["", "aws", "gcp", "azure", "10.0.0.0/16", "0.0.0.0/0", "H100", "p5.48xlarge", "spot", "auto",
                     "580", "13.0", "ssh-ed25519 AAAA", "use2-az2", "us-east-2a", "1", "-1", "1e400", "é"]),
    st.dates(), st.binary(max_size=8), st.frozensets(st.integers(), max_size=3),
)
junk = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(st.one_of(st.text(max_size=12), st.sampled_from(FIELDS)),
                                                    children, max_size=4)), max_leaves=12)


def set_path(spec: dict, path: str, value) -> dict:
    """A copy of `spec` with `value` at the dotted `path` (intermediate mappings created or replaced)."""
    spec = json.loads(json.dumps(spec))
    target = spec
    parts = path.split(".")
    for part in parts[:-1]:
        if not isinstance(target.get(part), dict):
            target[part] = {}
        target = target[part]
    target[parts[-1]] = value
    return spec


@settings(max_examples=examples(100), **FUZZ_SETTINGS)
@given(raw=junk)
def test_junk_anywhere_is_a_spec_error(raw):
    with time_bound(10):
        for candidate in (raw, {**BASE, "tags": raw}, {**BASE, "node": raw}):
            try:
                check_cluster_input(candidate)
            except SpecError:
                pass


@settings(max_examples=examples(100), **FUZZ_SETTINGS)
@given(group=junk, groups=junk)
def test_junk_in_node_groups_is_a_spec_error_or_a_plan(group, groups):
    """A group of junk beside a valid one, and `node_groups` itself junk: only SpecError, at paths the user wrote."""
    with time_bound(20):
        for candidate in ({**BASE, "node_groups": {"train": {}, "debug": group}}, {**BASE, "node_groups": groups}):
            try:
                check_cluster_input(candidate)
            except SpecError as err:
                assert err.problems and all(p.path for p in err.problems)
                assert not any("instance of" in p.expected or "valid dictionary" in p.expected for p in err.problems)


@settings(max_examples=examples(200), **FUZZ_SETTINGS)
@given(path=st.sampled_from(FIELDS), value=junk)
def test_junk_in_any_field_is_a_spec_error_or_a_plan(path, value):
    """Parse, select and plan each spec with one field replaced by junk: only SpecError may come out."""
    with time_bound(10):
        raw = set_path(BASE, path, value)
        try:
            _check_cluster_value(raw)  # what passes the CLI's check must reach the program as strict JSON
            json.dumps(raw, allow_nan=False)
            spec = parse_cluster_spec(raw)
            select(spec)
            check_cluster_input(raw)
        except SpecError as err:
            assert err.problems and all(p.path is not None for p in err.problems)
            # the user's terms: a section says it wants a mapping, never "instance of <pydantic class>"
            assert not any("instance of" in p.expected or "valid dictionary" in p.expected for p in err.problems), err


# Every section of the spec (a nested mapping), as a dotted path `set_path` can reach.
SECTIONS = sorted({path for path, model in sections() if not any(isinstance(part, int) for part in path)})
NOT_A_MAPPING = st.one_of(st.booleans(), st.integers(min_value=-(10**6), max_value=10**6), st.text(max_size=20),
                          st.lists(st.one_of(st.text(max_size=8), st.integers(min_value=-(10**6), max_value=10**6)),
                                   max_size=3))


@settings(max_examples=examples(100), **FUZZ_SETTINGS)
@given(section=st.sampled_from(SECTIONS), value=NOT_A_MAPPING)
def test_a_section_given_a_value_names_its_keys_not_a_class(section, value):
    """One problem at the section's path: a mapping, its keys, an example (`market: spot` is a shorthand)."""
    shorthand = section[-1] == "market" and isinstance(value, str)  # `market: spot` is `market: {type: spot}`
    with time_bound(10):
        path = ".".join(section)
        try:
            parse_cluster_spec(set_path(INFERENCE_BASE, path, value))  # its inference sections are valid
        except SpecError as err:
            if shorthand:
                assert [p.path for p in err.problems] == [f"{path}.type"], err
                return
            mine = [p for p in err.problems if p.path == path]
            assert len(mine) == 1 and len(err.problems) == 1, err
            assert mine[0].expected.startswith("expected a mapping with the keys `"), err
            assert ", e.g. {" in mine[0].expected, err
        else:
            assert shorthand, (section, value)

# Plausible values a user might type (as YAML text, the way `--set` and stack files carry them).
PLAUSIBLE = st.one_of(
    st.sampled_from(["0", "1", "2", "8", "64", "4096", "4097", "-1", "true", "false", "null", "~", "1.5", ".inf",
                     "2024-05-01", "[]", "{}", "[a, b]", "'580'", "580", "12.8", "'12.8'", "spot", "mixed",
                     "on-demand", "efa", "gpudirect", "infiniband", "tcp", "auto", "H100", "A100", "L4", "T4",
                     "p5.48xlarge", "g6e.xlarge", "a3-megagpu-8g", "Standard_ND96isr_H100_v5", "10.0.0.0/16",
                     "10.0.0.0/8", "10.0.0.0/28", "0.0.0.0/0", "172.16.0.0/12", "[0.0.0.0/0]",
                     "[203.0.113.0/24, 203.0.113.0/24]", "us-east-1", "eastus", "us-central1", "use2-az2",
                     "us-central1-a", "'1'", "ubuntu-24.04", "ami-0123456789abcdef0", "subnet-0123456789abcdef0",
                     "vpc-0123456789abcdef0", "[3g.40gb, 3g.40gb]", "[7g.80gb]", "0-95", "0-9999",
                     "{NCCL_DEBUG_SUBSYS: INIT}", "{LD_PRELOAD: x}", "!!binary aGVsbG8=", "!!set {a, b}",
                     "[[[[[[[[[[[[[[[[x]]]]]]]]]]]]]]]]", "'" + "x" * 300 + "'"]),
    st.integers(min_value=-5, max_value=5000).map(str),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20).map(yaml.safe_dump),
)
KEYS = st.one_of(st.sampled_from(FIELDS), st.sampled_from(FIELDS).map(lambda p: p + "s"),
                 st.sampled_from(["tags.team", "tags.Équipe", "node.nccl.env.NCCL_IB_HCA", "market", "access",
                                  "node", "accelerator", "nodes.x", "cloud", "node_groups", "node_groups.train",
                                  "node_groups.train.nodes", "node_groups.debug.market", "node_groups.x.accelerator",
                                  "node_groups.train.slurm_partition", "node_groups.debug.slurm_default",
                                  "node_groups.train.node.mig.profiles"]))


def plan_exit(capsys, argv: list[str]) -> tuple[int, str]:
    with time_bound(60):  # a plan takes about 1 s; the bound is for hangs, on a loaded machine too
        code = main(argv)
    out, err = capsys.readouterr()
    return code, out + err


@settings(max_examples=examples(25), **FUZZ_SETTINGS)
@given(stack=st.sampled_from(stack_names()), sets=st.lists(st.tuples(KEYS, PLAUSIBLE), min_size=1, max_size=3))
def test_mutated_stacks_exit_0_or_2_through_the_cli(capsys, stack, sets):
    argv = ["plan", stack, "--json", *[item for key, value in sets for item in ("--set", f"{key}={value}")]]
    code, text = plan_exit(capsys, argv)
    assert code in (0, 2) and "Traceback" not in text, (argv, text[-3000:])


@settings(max_examples=examples(6), **FUZZ_SETTINGS)
@given(stack=st.sampled_from(stack_names()), data=st.data())
def test_edited_stack_files_exit_0_or_2_through_the_cli(capsys, tmp_path_factory, stack, data):
    """Line-level edits a user makes by hand: a line dropped, repeated, re-indented or cut short."""
    lines = (find_project().stacks_dir / f"Pulumi.{stack}.yaml").read_text().splitlines()
    index = data.draw(st.integers(min_value=0, max_value=len(lines) - 1))
    edit = data.draw(st.sampled_from(["drop", "repeat", "indent", "dedent", "cut", "tab"]))
    line = lines[index]
    lines[index:index + 1] = {"drop": [], "repeat": [line, line], "indent": ["  " + line], "dedent": [line[2:]],
                              "cut": [line[:len(line) // 2]], "tab": ["\t" + line]}[edit]
    path = tmp_path_factory.mktemp("stack") / f"Pulumi.{stack}.yaml"
    path.write_text("\n".join(lines) + "\n")
    code, text = plan_exit(capsys, ["plan", str(path), "--json"])
    assert code in (0, 2) and "Traceback" not in text, (edit, index, text[-3000:])


def test_the_time_bound_fails_a_hanging_case():
    from .conftest import CaseTimeout
    with pytest.raises(CaseTimeout), time_bound(1):
        while math.isfinite(1.0):
            pass


def test_dates_and_sets_from_yaml_are_spec_errors():
    with pytest.raises(SpecError):
        check_cluster_input({**BASE, "tags": {"created": datetime.date(2024, 5, 1)}})


ELASTIC_BASE = {**BASE, "scheduler": {"kind": "slurm"}}
counts = st.one_of(st.integers(min_value=-3, max_value=5000), junk)


@settings(max_examples=examples(100), **FUZZ_SETTINGS)
@given(low=counts, high=counts, extra=st.dictionaries(st.sampled_from(["step", "min", "max", "nodes"]), junk,
                                                       max_size=1), slurm=st.booleans())
def test_junk_in_an_elastic_range_is_refused_at_nodes(low, high, extra, slurm):
    """`nodes: {min, max}` with junk in either bound, an extra key, with or without Slurm, at the cluster's level and
    a group's: only SpecError, every problem at the `nodes` the user wrote (never the internal `nodes_range`)."""
    wanted = {"min": low, "max": high, **extra}
    base = ELASTIC_BASE if slurm else BASE
    with time_bound(20):
        for candidate, where in (({**base, "nodes": wanted}, "nodes"),
                                 ({**base, "node_groups": {"fixed": {}, "burst": {"nodes": wanted}}},
                                  "node_groups.burst.nodes")):
            low_, high_ = wanted["min"], wanted["max"]
            valid = slurm and set(wanted) == {"min", "max"} and all(
                isinstance(v, int) and not isinstance(v, bool) for v in (low_, high_)) and 0 <= low_ <= high_ <= 4096 \
                and high_ >= 1
            try:
                check_cluster_input(candidate)  # every component declares a valid range
            except SpecError as caught:
                assert not valid, caught
                paths = [p.path for p in caught.problems]
                assert paths and all(path == where or path.startswith((f"{where}.", f"{where}[")) for path in paths), \
                    caught
            else:
                assert valid, candidate
