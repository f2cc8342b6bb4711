"""Issue 10's list of inputs that crashed, hung or were wrongly accepted: each exits 2 with one message naming the
field (or plans, where the input is valid), through the whole `gpufleet plan` CLI, and never prints a traceback."""

from __future__ import annotations

import pytest

from gpufleet.plan.cli import main

DEEP = "[" * 600 + "]" * 600
RSA_1024 = ("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7" + "A" * 166 + "Q== short@example.com")

# (stack, --set overrides, expected exit code, text the message must contain)
CASES = [
    # hang and tracebacks
    ("aws-train", ["network.cidr=0.0.0.0/4"], 2, "`network.cidr`: got '0.0.0.0/4'; AWS VPCs are /16 to /28"),
    ("aws-train", ["network.cidr=10.0.0.0/8"], 2, "`network.cidr`: got '10.0.0.0/8'; AWS VPCs are /16 to /28"),
    ("aws-train", ["network.cidr=10.0.0.0/27"], 2, "`network.cidr`: got '10.0.0.0/27'"),
    ("aws-train", ["network.cidr=10.0.0.0/32"], 2, "`network.cidr`: got '10.0.0.0/32'"),
    ("aws-train", ["network.cidr=10.0.0.0/24", "nodes=100"], 2, "fewer than `nodes` (100)"),
    ("aws-train", ["tags.created=2024-05-01"], 2, "`tags.created`: got '2024-05-01'; YAML read this as a date; quote"),
    ("aws-train", ["tags.x=!!binary aGVsbG8="], 2, "`tags.x`: got '(binary data)'"),
    ("aws-train", ["tags=!!set {a, b}"], 2, "`tags`: got '(a YAML set or tuple)'"),
    ("aws-train", ["nodes=1" + "0" * 5000], 2, "`--set nodes`: got '(a number of thousands of digits)'"),
    ("aws-train", ["nodes=1" + "0" * 30], 2, "`nodes`: got '(an integer of more than 18 digits)'"),
    ("aws-train", [f"tags={DEEP}"], 2, "nested too deeply to read"),
    ("aws-train", ["tags=" + "{a: " * 20 + "1" + "}" * 20], 2, "nested more than 12 levels"),
    ("aws-train", ["node.isolation.allowed_cpus=0-99999999999999999999"], 2, "`node.isolation.allowed_cpus`"),
    ("aws-train", ["node.isolation.allowed_cpus=0-9999"], 2, "`node.isolation.allowed_cpus`: got '0-9999'; p5.48xlarge has CPUs 0-191"),
    # wrongly accepted
    ("aws-train", ["nodes=true"], 2, "`nodes`: got true; expected a number, not true/false"),
    ("aws-train", ["network.cidr=true"], 2, "`network.cidr`: got true; expected a CIDR written as text"),
    ("aws-train", ["access.ssh_cidrs=[167772160]"], 2, "`access.ssh_cidrs[0]`: got 167772160; expected a CIDR written as text"),
    ("aws-train", ["market.spot_max_price_per_hour=.inf"], 2, "`market.spot_max_price_per_hour`: got 'inf'; expected a finite number"),
    ("aws-train", ["market.spot_max_price_per_hour=.nan"], 2, "`market.spot_max_price_per_hour`: got 'nan'"),
    ("aws-train", ["market.spot_max_price_per_hour=0.0000001"], 2, "expected a number from 0.001 to 10000"),
    ("aws-train", ["access.ssh_cidrs=[203.0.113.0/24, 203.0.113.0/24]"], 2, "`access.ssh_cidrs[1]`: got '203.0.113.0/24'; already listed as `access.ssh_cidrs[0]`"),
    ("aws-train", ["tags.team=" + "x" * 257], 2, "AWS tag values are at most 256 characters"),
    ("aws-train", ["access.ssh_public_key=ssh-ed25519 AAAA me"], 2, "`access.ssh_public_key`: got 'ssh-ed25519 AAAA me'; the key data is truncated"),
    ("aws-train", ["access.ssh_public_key=ssh-rsa notbase64!"], 2, "not valid base64"),
    ("aws-train", ["image.id=Deep Learning Base OSS Nvidia Driver GPU AMI"], 2, "`image.id`: got 'Deep Learning Base OSS Nvidia Driver GPU AMI'; expected an AMI id like ami-0123456789abcdef0 (not an AMI name)"),
    ("aws-train", ["network.existing_subnet_id=vpc-0123456789abcdef0"], 2, "`network.existing_subnet_id`: got 'vpc-0123456789abcdef0'; expected a subnet id like subnet-0123456789abcdef0; 'vpc-0123456789abcdef0' is a VPC id"),
    ("gcp-train", ["network.cidr=10.0.0.0/30"], 2, "`network.cidr`: got '10.0.0.0/30'; GCP subnet ranges are /29 or larger"),
    ("gcp-train", ["network.cidr=0.0.0.0/0"], 2, "`network.cidr`: got '0.0.0.0/0'"),
    ("gcp-train", ["network.cidr=172.16.0.0/12"], 0, ""),
    ("aws-train", ["access.monitoring_cidrs=[0.0.0.0/0]"], 2, "`access.monitoring_cidrs[0]`: got '0.0.0.0/0'; 0.0.0.0/0 opens the exporters to the internet"),
    ("aws-train", ["access.monitoring_cidrs=[0.0.0.0/0]", "access.allow_monitoring_from_anywhere=true"], 0, ""),
    ("aws-train", ["placement_group=false"], 2, "`placement_group`: got false; a multi-node EFA cluster needs a cluster placement group"),
    # wrongly refused or badly explained
    ("gcp-dev", ["tags.équipe=données"], 0, ""),
    ("gcp-dev", ["tags.Équipe=x"], 0, ""),
    ("aws-train", ["node.driver.branch=580"], 0, ""),
    ("aws-train", ["node.cuda=12.8"], 2, "`node.cuda`: got 12.8; YAML read this as a number; quote versions: '12.8'"),
    ("aws-train", ["market.type=on-demand"], 0, ""),
    ("aws-train", ["region=eastus"], 2, "`region`: got 'eastus'; expected an AWS region like 'us-east-2' ('eastus' looks like a region of azure; check `cloud`)"),
    ("azure-dev", ["accelerator.instance_type=Standard_NC40ads_H100_v5", "node.mig.profiles=[3g.47gb, 3g.47gb]"], 0, ""),
    # a section given a value instead of a mapping: its keys and an example, not a class name (issue 27, item 6)
    ("aws-train", ["monitoring=true"], 2, "`monitoring`: got true; expected a mapping with the keys `server`, "
     "`retention_days`, `data_disk_gib`, `instance_type`, `grafana_admin_password_secret`, `alerts`, e.g. {server: true}"),
    ("aws-train", ["storage.shared=lustre"], 2, "`storage.shared`: got 'lustre'; expected a mapping with the keys "
     "`kind` (required), `capacity_gib`, `mount_path`, `throughput`, `existing_id`, `data_repository`, e.g. {kind: lustre}"),
    ("aws-train", ["node.health=false"], 2, "`node.health`: got false; expected a mapping with the keys `dcgm_diag`, "
     "`nccl_allreduce`, `performance`, e.g. {dcgm_diag: false}"),
    ("azure-train", ["access=[]"], 2, "`access`: got []; expected a mapping with the keys `iam_policy_arns`, "),
    ("azure-train", ["access=[]"], 2, "e.g. {ssh_cidrs: [203.0.113.0/24]}"),
    ("aws-train", ["tags=[]"], 2, "`tags`: got []; expected a mapping of names to text, e.g. {name: value}"),
    # every stage in one message
    ("aws-train", ["accelerator.gpu=H10", "nodes=0"], 2, "`nodes`: got 0"),
    ("aws-dev", ["accelerator={gpu: H10}", "nodes=0"], 2, "`accelerator.gpu`: got 'H10'"),
]


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("stack, overrides, code, expected", CASES, ids=[f"{c[0]}:{' '.join(c[1])[:50]}" for c in CASES])
def test_issue_examples_exit_2_with_a_field_named_message_or_plan(capsys, stack, overrides, code, expected):
    args = [item for override in overrides for item in ("--set", override)]
    got, text = run(capsys, "plan", stack, "--json", *args)
    assert got == code, text[-2000:]
    assert expected in text and "Traceback" not in text, text[-2000:]
    if code == 2:
        assert text.count("problem(s)") == 1, text
        assert "instance of" not in text and "valid dictionary" not in text, text


def test_every_stage_reports_in_one_message(capsys):
    code, text = run(capsys, "plan", "aws-dev", "--set", "accelerator={gpu: H10}", "--set", "nodes=0")
    assert code == 2 and "2 problem(s)" in text and "`nodes`" in text and "`accelerator.gpu`" in text, text


STACK_FILES = [
    ("config:\n  gpufleet:cluster:\n    cloud: aws\n    nodes: 2\n    nodes: 16\n", [],
     ":5:5`: got '    nodes: 16'; expected valid YAML: the key 'nodes' is already set on line 4"),
    ("config:\n  gpufleet:cluster:\n    cloud: aws\n    nodes: [2\n  x: 1\n", [],
     ":5:4`: got '  x: 1'; expected valid YAML"),
    ("config:\n  - gpufleet:cluster\n", [], "config`: got '(a list)'; expected a mapping"),
    ("- just a list\n", [], "got '(a list)'; expected a mapping with a `config:` key"),
    ("config:\n  gpufleet:cluster: aws\n", ["nodes=2"], "`gpufleet:cluster`: got 'aws'; expected a mapping"),
    ("config:\n  gpufleet:cluster: aws\n", [], "`gpufleet:cluster`: got 'aws'; expected a mapping"),
    ("config:\n  gpufleet:clusters:\n    cloud: aws\n", [], "unknown key; did you mean `gpufleet:cluster`?"),
    ("config:\n  aws:region: us-east-1\n", [], "`gpufleet:cluster`: got nothing"),
]


@pytest.mark.parametrize("text, overrides, expected", STACK_FILES)
def test_bad_stack_files_exit_2_with_line_and_column(capsys, tmp_path, text, overrides, expected):
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(text)
    args = [item for override in overrides for item in ("--set", override)]
    code, out = run(capsys, "plan", str(path), *args)
    assert code == 2 and expected in out and "Traceback" not in out, out


def test_an_internal_error_is_one_line_with_a_debug_hint(capsys, monkeypatch):
    import gpufleet.plan.runner as runner  # the CLI imports it when `plan` runs (select must not pay for it)

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(runner, "run_program", broken)
    code, text = run(capsys, "plan", "aws-dev")
    assert code == 1 and "Traceback" not in text and "rerun with --debug" in text and len(text.splitlines()) == 1
    with pytest.raises(KeyError):
        main(["plan", "aws-dev", "--debug"])
