"""Shape and type errors: one message per problem, naming the field path, the value and what is accepted."""

import pytest

from gpufleet.spec import SpecError, parse_cluster_spec

MINIMAL = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2,
           "accelerator": {"gpu": "H100", "gpus_per_node": 8}}


def problems_of(raw: dict) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec(raw)
    return [str(p) for p in caught.value.problems]


def test_five_line_spec_gets_safe_defaults():
    spec = parse_cluster_spec(MINIMAL)
    assert spec.market.type == "on-demand"
    assert spec.fabric == "auto"
    assert spec.access.ssh_cidrs == []
    assert spec.image.kind == "driver-ready"
    assert spec.node.driver.branch == "580"


def test_market_shorthand_string_means_type():
    assert parse_cluster_spec({**MINIMAL, "market": "spot"}).market.type == "spot"


@pytest.mark.parametrize("raw, expected", [
    ({**MINIMAL, "nodez": 3}, "`nodez`: got 3; unknown key; expected one of `cloud`"),
    ({**MINIMAL, "accelerator": {"gpu": "H100", "count": 8}}, "`accelerator.count`: got 8; unknown key; expected one of `gpu`, `gpus_per_node`, `instance_type`"),
    ({**MINIMAL, "nodes": "many"}, "`nodes`: got 'many'; input should be a valid integer"),
    ({**MINIMAL, "nodes": 0}, "`nodes`: got 0; expected a whole number from 1 to 4096"),
    ({**MINIMAL, "accelerator": {"gpu": "L4", "gpu_fraction": 2}},
     "`accelerator.gpu_fraction`: got 2; expected a number greater than 0 and less than 1, e.g. 0.25"),
    ({**MINIMAL, "market": "spott"}, "`market.type`: got 'spott'; expected one of 'on-demand', 'spot' or 'mixed'"),
    ({**MINIMAL, "access": {"ssh_cidrs": ["10.0.0.1/33"]}}, "`access.ssh_cidrs[0]`: got '10.0.0.1/33'; input is not a valid IPv4 network"),
    ({**MINIMAL, "access": {"ssh_cidrs": ["10.0.0.1/24"]}}, "`access.ssh_cidrs[0]`: got '10.0.0.1/24'"),
    ({**MINIMAL, "cloud": "oci"}, "`cloud`: got 'oci'; expected one of 'aws', 'azure' or 'gcp'"),
    ({**MINIMAL, "node": {"cuda": "13"}}, "`node.cuda`: got '13'; expected a value like '13.0', '12.8'"),
    ({**MINIMAL, "node": {"driver": {"branch": "r580"}}}, "`node.driver.branch`: got 'r580'; expected a value like '580'"),
])
def test_bad_shape_names_path_value_and_accepted(raw, expected):
    assert any(p.startswith(expected) for p in problems_of(raw)), problems_of(raw)


def test_missing_required_fields_are_all_reported_at_once():
    found = problems_of({"cloud": "aws"})
    assert {p.split(":")[0] for p in found} == {"`region`", "`nodes`", "`accelerator`"}


def test_not_a_mapping_is_refused():
    assert problems_of(["aws"])[0].endswith("expected a mapping with at least `cloud`, `region`, `nodes` and `accelerator`")


def test_error_message_has_no_traceback_text():
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec({**MINIMAL, "nodes": 0})
    assert str(caught.value).startswith("invalid `gpufleet:cluster` (1 problem(s)):\n  - `nodes`")
    assert "Traceback" not in str(caught.value)
