"""A marketplace image's `latest`, resolved to its version number once per `pulumi up` and pinned.

A scale set whose model says `version: latest` lets Azure pick the newest release whenever it creates a VM: a repaired,
spot-restored or added node may boot a different image from its neighbours. So the model names the version that was
newest when `pulumi up` ran (as the AWS AMI and GCP image are pinned), and every VM the scale set creates until the
next `up` boots exactly that image.

azure-native (3.x) has no invoke for Azure's VirtualMachineImages List operation, so the version comes from that REST
operation itself (`GET .../publishers/{p}/artifacttypes/vmimage/offers/{o}/skus/{s}/versions`, the call behind `az vm
image list --all` and `Get-AzVMImage`) with the azure-native provider's own credentials: the token of
`authorization.getClientToken` and the subscription of `getClientConfig`, both invoked through the component's
provider. Azure's `latest` is the highest version number (`major.minor.patch`, compared as numbers), and so is ours.

The offline plan answers both invokes from its mocks and makes no REST call: the version reads `RESOLVED_AT_DEPLOY`.
Public Azure only: the REST call goes to `ARM_ENDPOINT`; for another cloud environment pin `image.id` with a version.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from functools import lru_cache

import pulumi
from pulumi_azure_native import authorization

from ..deploytime.lookups import RESOLVED_AT_DEPLOY, lookups_enabled

ARM_ENDPOINT = "https://management.azure.com"
API_VERSION = "2024-03-01"  # VirtualMachineImages_List as documented (learn.microsoft.com rest/api/compute)
TIMEOUT_SECONDS = 30


def newest_version(versions: list[str]) -> str:
    """The highest of `versions` compared part by part as numbers (`22.04.202501010` > `22.04.202412110`)."""
    if not versions:
        raise ValueError("no versions")
    return max(versions, key=lambda version: tuple(int(part) if part.isdigit() else -1 for part in version.split(".")))


def versions_url(subscription: str, location: str, image: Mapping[str, str]) -> str:
    quote = urllib.parse.quote
    return (f"{ARM_ENDPOINT}/subscriptions/{quote(subscription)}/providers/Microsoft.Compute/locations/"
            f"{quote(location)}/publishers/{quote(image['publisher'])}/artifacttypes/vmimage/offers/"
            f"{quote(image['offer'])}/skus/{quote(image['sku'])}/versions?api-version={API_VERSION}")


def list_versions(subscription: str, location: str, image: Mapping[str, str], token: str) -> list[str]:
    """The image's published versions in `location`, as Azure lists them; a failure names the image and the cause."""
    return list(_listed(versions_url(subscription, location, image), token,
                        f"{image['publisher']}:{image['offer']}:{image['sku']}", location))


@lru_cache(maxsize=32)
def _listed(url: str, token: str, urn: str, location: str) -> tuple[str, ...]:
    """One REST call per image and location in a run (every scale set of the image shares it)."""
    hint = f"pin one with `image.id: {urn}:<version>` or set `image.track: latest`"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (ARM over https)
            listed = json.load(response)
    except urllib.error.HTTPError as err:
        detail = err.read().decode(errors="replace")[:300]
        raise pulumi.RunError(f"cannot list the versions of image {urn} in {location}: HTTP {err.code} {detail}; "
                              f"{hint}") from None
    except (urllib.error.URLError, TimeoutError, ValueError) as err:
        raise pulumi.RunError(f"cannot list the versions of image {urn} in {location}: {err}; {hint}") from None
    versions = tuple(entry["name"] for entry in listed if isinstance(entry, dict) and isinstance(entry.get("name"), str))
    if not versions:
        raise pulumi.RunError(f"Azure lists no version of image {urn} in {location}: check the publisher, offer "
                              "and SKU, and that the image is offered in this region")
    return versions


def pinned_version(image: Mapping[str, str], location: str,
                   opts: pulumi.InvokeOutputOptions) -> pulumi.Output[str]:
    """The newest version of marketplace `image` (publisher, offer, sku) in `location`, looked up at deploy time."""
    subscription = authorization.get_client_config_output(opts=opts).subscription_id
    token = authorization.get_client_token_output(opts=opts).token

    def resolve(values: list) -> str:
        if not lookups_enabled():
            return RESOLVED_AT_DEPLOY
        return newest_version(list_versions(values[0], location, image, values[1]))

    # The token is a credential; the version is not, and must not be masked in the model or the state.
    return pulumi.Output.unsecret(pulumi.Output.all(subscription, token).apply(resolve))


def pinned_reference(reference: dict[str, str], location: str, track: str,
                     opts: pulumi.InvokeOutputOptions) -> dict[str, pulumi.Input[str]]:
    """ImageReference fields with a marketplace `latest` replaced by the version it names now; unchanged for
    `track: latest` (the explicit opt-out), for an exact version and for image resource ids."""
    if track == "latest" or reference.get("version") != "latest":
        return dict(reference)
    return {**reference, "version": pinned_version(reference, location, opts)}
