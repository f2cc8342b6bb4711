"""The GCP monitoring server: no external IP, IAP only, list-only discovery, secrets in Secret Manager."""

from __future__ import annotations

import json

from tests.conftest import cached_plan, of_type, one
from tests.yaml_reader import read_yaml

TRAIN = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 2,
         "accelerator": {"instance_type": "a3-megagpu-8g"}, "market": "spot", "fabric": "tcp"}
DEV = {**TRAIN, "nodes": 1, "accelerator": {"instance_type": "g2-standard-8"}, "fabric": "auto"}
ALERTS = {"slack_webhook_secret": "slackWebhook", "email": "oncall@example.com",
          "email_smarthost": "smtp.example.com:587", "email_username": "alerts", "email_password_secret": "smtp"}
SECRETS = {"gpufleet:slackWebhook": "https://hooks.slack.com/services/T0/B0/gcp-slack-s3cr3t",
           "gpufleet:smtp": "gcp-smtp-s3cr3t", "gpufleet:grafanaAdminPassword": "gcp-grafana-s3cr3t"}


def server_plan():
    return cached_plan({**TRAIN, "monitoring": {"alerts": ALERTS}}, SECRETS)


def by_name(result, token: str) -> dict:
    return {r.name: r.inputs for r in of_type(result, token)}


def test_server_has_no_external_ip_and_keeps_metrics_on_its_own_disk():
    result = server_plan()
    server = one(result, "gcp:compute/instance:Instance").inputs
    assert server["networkInterfaces"] == [{"subnetwork": "gpufleet-subnet-id"}]
    assert server["attachedDisks"] == [{"deviceName": "prometheus-data", "source": "gpufleet-monitoring-data-id"}]
    assert server["shieldedInstanceConfig"]["enableSecureBoot"] is True
    assert server["metadata"]["enable-oslogin"] == "TRUE"
    assert one(result, "gcp:compute/disk:Disk").inputs["size"] == 50


def test_server_identity_lists_instances_and_reads_its_own_secrets_only():
    result = server_plan()
    role = by_name(result, "gcp:projects/iAMCustomRole:IAMCustomRole")["gpufleet-monitoring-sd-role"]
    assert role["permissions"] == ["compute.instances.list"]
    project_members = [m for m in by_name(result, "gcp:projects/iAMMember:IAMMember").values()
                       if "-mon@" in m["member"]]
    assert [m["role"] for m in project_members] == ["projects/example-project/roles/gpufleet_test_monitoring_sd"]
    access = by_name(result, "gcp:secretmanager/secretIamMember:SecretIamMember")
    assert len(access) == 3 and {a["role"] for a in access.values()} == {"roles/secretmanager.secretAccessor"}


def test_only_iap_reaches_the_server_and_only_on_ssh():
    rule = by_name(server_plan(), "gcp:compute/firewall:Firewall")["gpufleet-monitoring-fw-iap"]
    assert rule["sourceRanges"] == ["35.235.240.0/20"] and rule["allows"] == [{"ports": ["22"], "protocol": "tcp"}]
    assert rule["targetServiceAccounts"] == ["gpufleet-test-mon@example-project.iam.gserviceaccount.com"]


def test_secrets_reach_secret_manager_only():
    result = server_plan()
    versions = by_name(result, "gcp:secretmanager/secretVersion:SecretVersion")
    assert len(versions) == 3 and all(v["secretData"] == "[secret]" for v in versions.values())
    user_data = one(result, "gcp:compute/instance:Instance").inputs["metadata"]["user-data"]
    text = user_data + json.dumps([r.inputs for r in result.resources]) + json.dumps(result.outputs, default=str)
    assert not [value for value in SECRETS.values() if value in text]
    env = next(f["content"] for f in read_yaml(user_data)["write_files"]
               if f["path"] == "/etc/gpufleet-monitoring/setup.env")
    assert "SECRET_SMTP_PASSWORD=projects/example-project/secrets/gpufleet-test-monitoring-smtp-password" in env


def test_server_discovers_only_gpu_nodes():
    user_data = one(server_plan(), "gcp:compute/instance:Instance").inputs["metadata"]["user-data"]
    prometheus = read_yaml(next(f["content"] for f in read_yaml(user_data)["write_files"]
                                     if f["path"] == "/etc/prometheus/prometheus.yml"))
    job = next(j for j in prometheus["scrape_configs"] if j["job_name"] == "gpufleet-dcgm")
    assert job["gce_sd_configs"][0]["filter"] == 'labels.gpufleet-stack="test"'
    assert {"source_labels": ["__meta_gce_label_gpufleet_role"], "regex": "node", "action": "keep"} in \
        job["relabel_configs"]


def test_single_node_tcp_cluster_has_no_server():
    assert of_type(cached_plan(DEV), "gcp:compute/instance:Instance") == []
