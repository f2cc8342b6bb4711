"""The structural check before any model runs, the YAML reader and the SSH key parser (issue 10, item 1)."""

from __future__ import annotations

import base64
import datetime
import struct

import pytest

from gpufleet.spec import SpecError
from gpufleet.spec.raw import MAX_DEPTH, MAX_ITEMS, expand_shorthands, raw_problems
from gpufleet.spec.source import load_yaml
from gpufleet.spec.ssh import parse_public_key


def paths(raw) -> list[str]:
    return [p.path for p in raw_problems(raw)]


@pytest.mark.parametrize("raw, path", [
    ({"tags": {"created": datetime.date(2024, 5, 1)}}, "tags.created"),
    ({"tags": {"at": datetime.datetime(2024, 5, 1, 12, 0)}}, "tags.at"),
    ({"image": {"id": b"\x00"}}, "image.id"),
    ({"tags": {1, 2}}, "tags"),
    ({"nodes": 10**30}, "nodes"),
    ({"market": {"spot_max_price_per_hour": float("inf")}}, "market.spot_max_price_per_hour"),
    ({"market": {"spot_max_price_per_hour": float("nan")}}, "market.spot_max_price_per_hour"),
    ({"tags": {datetime.date(2024, 5, 1): "x"}}, "tags.2024-05-01"),
    ({"access": {"ssh_cidrs": ["1.2.3.0/24"] * (MAX_ITEMS + 1)}}, "access.ssh_cidrs"),
])
def test_values_yaml_builds_but_a_spec_cannot_mean_are_named_by_path(raw, path):
    assert path in paths(raw)


def test_nesting_is_bounded_without_recursion():
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    assert paths({"tags": deep}) and len(raw_problems({"tags": deep})) == 1
    assert MAX_DEPTH < 20


def test_a_plain_tree_has_no_problems():
    assert raw_problems({"cloud": "aws", "nodes": 2, "tags": {"a": "b"}, "access": {"ssh_cidrs": ["1.2.3.0/24"]},
                         "placement_group": False, "market": {"spot_max_price_per_hour": 1.5}}) == []


def test_market_shorthand_expands_for_set():
    assert expand_shorthands({"market": "spot", "nodes": 2}) == {"market": {"type": "spot"}, "nodes": 2}


def test_yaml_duplicate_key_names_both_lines():
    with pytest.raises(SpecError) as caught:
        load_yaml("a: 1\nb:\n  c: 2\n  c: 3\n", "Pulumi.x.yaml")
    (problem,) = caught.value.problems
    assert problem.path == "Pulumi.x.yaml:4:3" and problem.value == "  c: 3" and "already set on line 3" in problem.expected


def test_yaml_syntax_error_names_line_column_and_text():
    with pytest.raises(SpecError) as caught:
        load_yaml("config:\n  nodes: [1, 2\n", "f.yaml")
    assert caught.value.problems[0].path.startswith("f.yaml:")


def test_yaml_merge_keys_and_repeated_values_are_fine():
    assert load_yaml("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n", "f") == {"base": {"x": 1}, "other": {"x": 1, "y": 2}}


def _blob(*fields: bytes) -> str:
    return base64.b64encode(b"".join(struct.pack(">I", len(f)) + f for f in fields)).decode()


class TestParsePublicKey:
    def test_ed25519(self):
        key = parse_public_key(f"ssh-ed25519 {_blob(b'ssh-ed25519', bytes(32))} me@host")
        assert (key.kind, key.bits) == ("ssh-ed25519", 256)

    def test_rsa_bits_come_from_the_modulus(self):
        blob = _blob(b"ssh-rsa", b"\x01\x00\x01", b"\x00" + b"\xff" * 128)
        key = parse_public_key(f"ssh-rsa {blob}")
        assert (key.kind, key.bits) == ("ssh-rsa", 1024)

    def test_ecdsa_curve_must_match_the_type(self):
        good = _blob(b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" * 65)
        bad = _blob(b"ecdsa-sha2-nistp256", b"nistp384", b"\x04" * 65)
        assert parse_public_key(f"ecdsa-sha2-nistp256 {good}").bits == 256
        with pytest.raises(ValueError):
            parse_public_key(f"ecdsa-sha2-nistp256 {bad}")

    @pytest.mark.parametrize("text", [
        "ssh-ed25519", "ssh-ed25519 AAAA me", "ssh-ed25519 not-base64!", "ssh-dss AAAAB3NzaC1kc3M=",
        f"ssh-ed25519 {_blob(b'ssh-rsa', bytes(32))}", f"ssh-ed25519 {_blob(b'ssh-ed25519', bytes(31))}",
        f"ssh-ed25519 {_blob(b'ssh-ed25519', bytes(32), b'extra')}",
    ])
    def test_keys_with_only_a_valid_prefix_are_refused(self, text):
        with pytest.raises(ValueError):
            parse_public_key(text)
