"""Downloads pricing responses when the network allows. Every failure becomes a `RefreshError` that says
what to download by hand and pass with `--from-file`; nothing here needs credentials except AWS spot history.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from .records import RefreshError

TIMEOUT_S = 20
AWS_OFFER_URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.json"
AZURE_URL = "https://prices.azure.com/api/retail/prices"
GCP_URL = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
AWS_SPOT_HINT = ("AWS spot prices come from ec2:DescribeSpotPriceHistory, which needs AWS credentials: run "
                 "`aws ec2 describe-spot-price-history --product-descriptions Linux/UNIX --start-time <now> "
                 "--region R > spot.json` and `aws ec2 describe-availability-zones --all-availability-zones "
                 "--region R > zones.json`, then pass `--spot-file spot.json --zones-file zones.json`")


def get_json(url: str, hint: str) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:  # noqa: S310 (https only, fixed hosts)
            return json.load(response)
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise RefreshError(f"cannot reach {urllib.parse.urlsplit(url).netloc}: {reason}. {hint}") from None
    except json.JSONDecodeError:
        raise RefreshError(f"{url} did not return JSON. {hint}") from None


def aws_offer_files(regions: list[str]) -> list[dict]:
    if not regions:
        raise RefreshError("name the regions to download with `--region` (each offer file is large)")
    hint = "Download the offer file from that URL elsewhere and pass it with `--from-file`"
    return [get_json(AWS_OFFER_URL.format(region=r), hint) for r in regions]


def azure_pages(skus: list[str], regions: list[str]) -> list[dict]:
    hint = ("Save the API's pages elsewhere (follow `NextPageLink`) and pass them with `--from-file`")
    pages = []
    for sku in skus:
        query = f"serviceName eq 'Virtual Machines' and armSkuName eq '{sku}'"
        if regions:
            query += " and (" + " or ".join(f"armRegionName eq '{r}'" for r in regions) + ")"
        url: str | None = f"{AZURE_URL}?{urllib.parse.urlencode({'$filter': query})}"
        while url:
            page = get_json(url, hint)
            pages.append(page)
            url = page.get("NextPageLink")
    return pages


def gcp_pages(api_key: str | None) -> list[dict]:
    if not api_key:
        raise RefreshError("the Cloud Billing Catalog API needs an API key: pass `--api-key`, or save its pages "
                           f"({GCP_URL}?key=...&pageToken=...) and pass them with `--from-file`")
    pages, token = [], ""
    hint = "Save the pages elsewhere and pass them with `--from-file`"
    while True:
        query = urllib.parse.urlencode({"key": api_key, "currencyCode": "USD", "pageSize": 5000,
                                        **({"pageToken": token} if token else {})})
        page = get_json(f"{GCP_URL}?{query}", hint)
        pages.append(page)
        token = page.get("nextPageToken") or ""
        if not token:
            return pages
