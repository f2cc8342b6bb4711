"""`gpufleet diff`: the issue's "done when" cases, replacements, outputs, cost, warnings, user data, exit codes."""

from __future__ import annotations

import json

import pytest

from gpufleet.plan.cli import main
from gpufleet.plan.diff import USER_DATA_NOTE, diff_plans
from gpufleet.plan.diff_render import COMMENT_LIMIT, diff_json, diff_markdown

from .plan_docs import plan_doc


def test_a_change_of_nodes_changes_only_the_fleet_size_with_a_cost_delta_and_no_user_data_change():
    diff = diff_plans(plan_doc("aws-train"), plan_doc("aws-train", "nodes=4"))
    assert [c.name for c in diff.changed] == ["gpufleet-nodes"]
    assert {p.path for p in diff.changed[0].changes} == {"desiredCapacity", "maxSize", "minSize"}
    assert diff.replaced == [] and diff.added == [] and diff.removed == []
    assert diff.user_data == {}
    hourly = diff.cost["usd_per_hour"]
    assert hourly["delta"] == pytest.approx(hourly["head"] - hourly["base"], abs=0.01) and hourly["delta"] > 0
    text = diff_markdown(diff)
    table = text[:text.index("<details>")]
    assert "| changed | 1 |" in table and "| **replaced** | 0 |" in table
    assert "| node user data | no change |" in table and "(+$" in table


@pytest.mark.parametrize(("stack", "zone", "zonal"), [
    ("aws-train", "use2-az1", {"aws:ec2/subnet:Subnet"}),
    ("gcp-train", "us-central1-b", {"gcp:compute/instanceGroupManager:InstanceGroupManager"}),
    ("azure-train", "'2'", {"azure-native:compute:VirtualMachineScaleSet", "azure-native:network:NatGateway",
                            "azure-native:network:PublicIPAddress"}),
])
def test_a_zone_change_replaces_every_zonal_resource(stack, zone, zonal):
    base, head = plan_doc(stack), plan_doc(stack, f"zone={zone}")
    diff = diff_plans(base, head)
    replaced = {c.urn for c in diff.replaced}
    zonal_urns = {r["urn"] for r in head["resources"] if r["type"] in zonal}
    assert zonal_urns and zonal_urns <= replaced
    assert all(c.replace for c in diff.changed if c.type in zonal)
    assert "will be **REPLACED**" in diff_markdown(diff)


def test_a_replaced_subnet_replaces_what_holds_its_id_in_a_force_new_input():
    diff = diff_plans(plan_doc("aws-train"), plan_doc("aws-train", "zone=use2-az1"))
    nat = next(c for c in diff.changed if c.type == "aws:ec2/natGateway:NatGateway")
    assert "subnetId refers to" in nat.replace


def test_a_nccl_debug_change_shows_the_decoded_user_data_diff_and_that_nodes_keep_the_old_one():
    diff = diff_plans(plan_doc("aws-train"), plan_doc("aws-train", "node.nccl.debug=INFO"))
    assert diff.replaced == []
    (name, text), = diff.user_data.items()
    assert "-    NCCL_DEBUG=WARN" in text and "+    NCCL_DEBUG=INFO" in text
    markdown = diff_markdown(diff)
    assert USER_DATA_NOTE in markdown and "```diff" in markdown


def test_no_change_exits_0_a_change_exits_1(tmp_path, capsys):
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    base.write_text(json.dumps(plan_doc("gcp-dev")))
    head.write_text(json.dumps(plan_doc("gcp-dev", "nodes=2")))
    assert main(["diff", str(base), str(base)]) == 0
    capsys.readouterr()
    assert main(["diff", str(base), str(head), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["has_changes"] is True


@pytest.mark.parametrize(("side", "message"), [
    ("missing.json", "no such plan file"),
    ("git:no-such-ref:aws-train", "no git ref"),
    ("git:HEAD:no-such-stack", "no stack 'no-such-stack'"),
    ("git:HEAD", "expected git:REF:STACK"),
])
def test_bad_input_exits_2_with_one_line(side, message, tmp_path, capsys):
    side = str(tmp_path / side) if side.endswith(".json") else side  # git sides: this checkout's repository
    good = tmp_path / "good.json"
    good.write_text(json.dumps(plan_doc("aws-dev")))
    assert main(["diff", side, str(good)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("content", ["{not json", "[]", '{"resources": 3}', '{"resources": [{"urn": 1}]}'])
def test_a_file_that_is_not_a_plan_exits_2(content, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(plan_doc("aws-dev")))
    assert main(["diff", str(bad), str(good)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_outputs_warnings_and_added_or_removed_resources_are_reported():
    base, head = plan_doc("aws-dev"), plan_doc("aws-dev")
    head["outputs"]["warnings"] = ["a new warning"]
    base["outputs"]["warnings"] = ["an old warning"]
    moved = head["resources"].pop()
    head["resources"].append({**moved, "urn": moved["urn"] + "-new", "name": moved["name"] + "-new"})
    diff = diff_plans(base, head)
    assert diff.warnings_added == ["a new warning"] and diff.warnings_removed == ["an old warning"]
    assert [r["urn"] for r in diff.added] == [moved["urn"] + "-new"]
    assert [r["urn"] for r in diff.removed] == [moved["urn"]]
    assert json.loads(diff_json(diff))["warnings"]["added"] == ["a new warning"]


def test_an_unknown_resource_type_is_reported_as_unknown_not_as_an_update():
    base, head = plan_doc("aws-dev"), plan_doc("aws-dev")
    for doc, size in ((base, 1), (head, 2)):
        doc["resources"].append({"urn": "urn:pulumi:aws-dev::gpufleet::aws:sagemaker/domain:Domain::fs",
                                 "type": "aws:sagemaker/domain:Domain", "name": "fs", "parent": "",
                                 "inputs": {"storageCapacity": size}})
    diff = diff_plans(base, head)
    (change,) = diff.changed
    assert change.unknown_replace and not change.replace
    assert "no replace-on-change data for: aws:sagemaker/domain:Domain" in diff_markdown(diff)


def test_the_markdown_stays_under_the_comment_limit_with_a_huge_user_data_diff():
    base, head = plan_doc("aws-train"), plan_doc("aws-train", "node.nccl.debug=INFO")
    diff = diff_plans(base, head)
    diff.user_data = {f"group-{i}": "+x\n" * 40_000 for i in range(4)}
    text = diff_markdown(diff)
    assert len(text) < COMMENT_LIMIT
    assert text.index("| added |") < text.index("<details>")
    assert "truncated" in text


def test_policy_results_are_a_section_of_the_diff():
    base, head = plan_doc("gcp-dev"), plan_doc("gcp-dev")
    firewall = next(r for r in head["resources"] if r["type"] == "gcp:compute/firewall:Firewall")
    firewall["inputs"]["sourceRanges"] = ["0.0.0.0/0"]
    firewall["inputs"]["allows"] = [{"protocol": "tcp", "ports": ["22"]}]
    diff = diff_plans(base, head)
    assert [v.policy for v in diff.policy_new()] == ["gcp-no-open-ssh"]
    assert "**new** mandatory `gcp-no-open-ssh`" in diff_markdown(diff)
