"""The Azure monitoring server: no public IP, Bastion-only SSH, discovery-only custom role, secrets in Key Vault."""

from __future__ import annotations

import json

from gpufleet.plan.mocks import COMPUTED_OUTPUTS
from gpufleet.plan.userdata import decode_user_data
from tests.conftest import cached_plan, of_type, one
from tests.yaml_reader import read_yaml

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGpufleetTestKey0000000000000000000000000000 t@example.com"
TRAIN = {"cloud": "azure", "region": "eastus", "nodes": 2, "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"},
         "market": "spot", "fabric": "infiniband", "access": {"ssh_public_key": KEY, "ssh_cidrs": ["10.250.0.0/26"]}}
ALERTS = {"pagerduty_key_secret": "pagerdutyKey", "slack_webhook_secret": "slackWebhook"}
SECRETS = {"gpufleet:slackWebhook": "https://hooks.slack.com/services/T0/B0/azure-slack-s3cr3t",
           "gpufleet:pagerdutyKey": "azure-pagerduty-s3cr3t", "gpufleet:grafanaAdminPassword": "azure-grafana-s3cr3t"}
VM = "azure-native:compute:VirtualMachine"


def server_plan():
    return cached_plan({**TRAIN, "monitoring": {"alerts": ALERTS}}, SECRETS)


def by_name(result, token: str) -> dict:
    return {r.name: r.inputs for r in of_type(result, token)}


def custom_data(result) -> str:
    return decode_user_data(by_name(result, VM)["gpufleet-monitoring-server"]["osProfile"]["customData"])


def test_server_nic_is_private_behind_the_cluster_nsg():
    nic = one(server_plan(), "azure-native:network:NetworkInterface").inputs
    config = nic["ipConfigurations"][0]
    assert "publicIPAddress" not in config and nic["networkSecurityGroup"] == {"id": "gpufleet-nsg-id"}
    assert config["applicationSecurityGroups"] == [{"id": "gpufleet-monitoring-asg-id"}]


def test_nsg_admits_ssh_to_the_server_from_access_ssh_cidrs_only():
    rules = {r["name"]: r for r in one(server_plan(), "azure-native:network:NetworkSecurityGroup").inputs["securityRules"]}
    rule = rules["allow-ssh-monitoring"]
    assert rule["sourceAddressPrefixes"] == ["10.250.0.0/26"] and rule["destinationPortRange"] == "22"
    assert rule["destinationApplicationSecurityGroups"] == [{"id": "gpufleet-monitoring-asg-id"}]
    assert [name for name, r in rules.items() if "gpufleet-monitoring-asg-id" in json.dumps(r)] == ["allow-ssh-monitoring"]


def test_identity_reads_only_what_discovery_needs_and_its_own_secrets():
    result = server_plan()
    role = one(result, "azure-native:authorization:RoleDefinition").inputs
    assert role["permissions"][0]["actions"] == [
        "Microsoft.Compute/virtualMachines/read", "Microsoft.Network/networkInterfaces/read",
        "Microsoft.Compute/virtualMachineScaleSets/read", "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
        "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces/read"]
    assert role["assignableScopes"] == [role["scope"]] and role["scope"].endswith("/resourceGroups/gpufleet-rg")
    assignments = by_name(result, "azure-native:authorization:RoleAssignment")
    secret_scopes = sorted(a["scope"] for n, a in assignments.items() if n.endswith("-access") and "secret" in n)
    assert secret_scopes == ["gpufleet-monitoring-secret-grafana-admin-id", "gpufleet-monitoring-secret-pagerduty-key-id",
                             "gpufleet-monitoring-secret-slack-webhook-id"]
    # Each is granted to the server VM's own system identity (the plan fakes its principal as Azure would return it).
    server_principal = COMPUTED_OUTPUTS[VM]["identity"]["principalId"]
    server_assignments = {n: a for n, a in assignments.items() if n.startswith("gpufleet-monitoring-")}
    assert len(server_assignments) == 4
    assert {a.get("principalId") for a in server_assignments.values()} == {server_principal}
    vault = one(result, "azure-native:keyvault:Vault").inputs
    assert vault["properties"]["enableRbacAuthorization"] is True


def test_data_disk_is_encrypted_and_outlives_the_vm():
    result = server_plan()
    disk = one(result, "azure-native:compute:Disk").inputs
    assert disk["encryption"] == {"type": "EncryptionAtRestWithPlatformKey"} and disk["diskSizeGB"] == 50
    data_disk = by_name(result, VM)["gpufleet-monitoring-server"]["storageProfile"]["dataDisks"][0]
    assert data_disk["deleteOption"] == "Detach" and data_disk["lun"] == 0


def test_secrets_reach_key_vault_only():
    result = server_plan()
    secrets = by_name(result, "azure-native:keyvault:Secret")
    assert len(secrets) == 3 and all(s["properties"] == "[secret]" for s in secrets.values())
    text = custom_data(result) + json.dumps([r.inputs for r in result.resources]) + json.dumps(result.outputs,
                                                                                                 default=str)
    assert not [value for value in SECRETS.values() if value in text]


def test_server_discovers_the_scale_sets_the_stack_exports():
    config = read_yaml(custom_data(server_plan()))
    prometheus = read_yaml(next(f["content"] for f in config["write_files"]
                                     if f["path"] == "/etc/prometheus/prometheus.yml"))
    exported = read_yaml(server_plan().outputs["prometheus_scrape_config"])["scrape_configs"]
    assert [job for job in prometheus["scrape_configs"] if "azure_sd_configs" in job] == exported
