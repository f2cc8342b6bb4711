"""Azure invokes the program makes, answered offline with placeholders (keys camelCase).

The provider's client configuration (Prometheus' Azure discovery and the image-version lookup need the subscription
id) and its token (the image-version lookup, `components/azure/image_version.py`) are looked up; offline the lookup
makes no REST call, and the pinned version reads as resolved at `pulumi up`. The resource group and VNet of an
existing subnet are parts of its resource id, so they need no lookup.
"""

PLACEHOLDER_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


def _client_config(args: dict) -> dict:
    return {"subscriptionId": PLACEHOLDER_SUBSCRIPTION, "tenantId": PLACEHOLDER_SUBSCRIPTION,
            "clientId": PLACEHOLDER_SUBSCRIPTION, "objectId": PLACEHOLDER_SUBSCRIPTION}


def _client_token(args: dict) -> dict:
    """No Azure login exists offline: a stand-in that is never sent anywhere (offline lookups make no call)."""
    return {"token": "offline-plan-token"}


def _aml_filesystem(args: dict) -> dict:
    """An existing Azure Managed Lustre filesystem: its MGS address is a placeholder; it is in zone 1."""
    return {"name": args.get("amlFilesystemName"), "clientInfo": {"mgsAddress": "10.1.0.4"}, "zones": ["1"]}


CALLS = {
    "azure-native:authorization:getClientConfig": _client_config,
    "azure-native:authorization:getClientToken": _client_token,
    "azure-native:storagecache:getAmlFilesystem": _aml_filesystem,
}
