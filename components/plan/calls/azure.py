"""Azure invokes the program makes, answered offline with placeholders (keys camelCase).

Only the provider's client configuration is looked up: Prometheus' Azure discovery needs the subscription id. The HPC
image is a marketplace URN that Azure resolves when each VM is created, and the resource group and VNet of an existing
subnet are parts of its resource id, so neither needs a lookup.
"""

PLACEHOLDER_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


def _client_config(args: dict) -> dict:
    return {"subscriptionId": PLACEHOLDER_SUBSCRIPTION, "tenantId": PLACEHOLDER_SUBSCRIPTION,
            "clientId": PLACEHOLDER_SUBSCRIPTION, "objectId": PLACEHOLDER_SUBSCRIPTION}


def _aml_filesystem(args: dict) -> dict:
    """An existing Azure Managed Lustre filesystem: its MGS address is a placeholder; it is in zone 1."""
    return {"name": args.get("amlFilesystemName"), "clientInfo": {"mgsAddress": "10.1.0.4"}, "zones": ["1"]}


CALLS = {
    "azure-native:authorization:getClientConfig": _client_config,
    "azure-native:storagecache:getAmlFilesystem": _aml_filesystem,
}
