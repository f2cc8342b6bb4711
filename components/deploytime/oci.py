"""A container tag's digest, read from its registry through the OCI distribution API at deploy time.

`HEAD /v2/<repository>/manifests/<tag>` with the manifest-list / image-index media types in `Accept` answers the
digest of what the tag names now (`Docker-Content-Digest`): for a multi-architecture image the index, so the same
pinned reference pulls the right platform on every node. Registries that want a token answer 401 with
`WWW-Authenticate: Bearer realm=...,service=...,scope=...`; public images get an anonymous pull token from that
realm (Docker's token authentication specification, which NGC, ECR Public, GCR and MCR follow). A registry that
leaves the header out of its HEAD answer is asked with GET, and the digest is the sha256 of the manifest's bytes; when
it does send the header on GET, the two must agree.

No credentials are sent or kept: every image gpufleet pins is public. Loopback registries (tests) speak plain HTTP.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message

MANIFEST_TYPES = ", ".join((
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
))
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
REFERENCE = re.compile(r"^(?P<registry>[a-z0-9.-]+(?::[0-9]+)?)/(?P<repository>[a-z0-9._/-]+):(?P<tag>[\w.-]{1,128})$")
CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
TIMEOUT_SECONDS = 30


class DigestError(RuntimeError):
    """The registry did not give a usable digest for the reference; the message names it and the cause."""


@dataclass(frozen=True)
class ImageTag:
    registry: str
    repository: str
    tag: str

    @classmethod
    def parse(cls, reference: str) -> ImageTag:
        match = REFERENCE.match(reference)
        if match is None:
            raise DigestError(f"{reference!r} is not REGISTRY/REPOSITORY:TAG")
        return cls(match["registry"], match["repository"], match["tag"])

    @property
    def base_url(self) -> str:
        scheme = "http" if self.registry.split(":")[0] in LOOPBACK else "https"
        return f"{scheme}://{self.registry}"

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}:{self.tag}"


def tag_digest(reference: str) -> str:
    """`sha256:<hex>` of the manifest (or index) `reference` (REGISTRY/REPOSITORY:TAG) names now."""
    image = ImageTag.parse(reference)
    url = f"{image.base_url}/v2/{image.repository}/manifests/{urllib.parse.quote(image.tag)}"
    token = None
    status, headers, _ = _request("HEAD", url, token, image)
    if status == 401:
        token = _anonymous_token(headers.get("WWW-Authenticate") or "", image)
        status, headers, _ = _request("HEAD", url, token, image)
    if status == 200 and headers.get("Docker-Content-Digest"):
        return _checked(headers["Docker-Content-Digest"], image)
    if status not in (200, 405):  # some registries refuse HEAD: GET says the same and carries the bytes
        raise DigestError(f"registry answered HTTP {status} for {image}")
    status, headers, body = _request("GET", url, token, image)
    if status != 200:
        raise DigestError(f"registry answered HTTP {status} for {image}")
    computed = "sha256:" + hashlib.sha256(body).hexdigest()
    stated = headers.get("Docker-Content-Digest")
    if stated and stated != computed:
        raise DigestError(f"registry states digest {stated} for {image} but its manifest hashes to {computed}")
    return computed


def _checked(digest: str, image: ImageTag) -> str:
    if not DIGEST.match(digest):
        raise DigestError(f"registry gave {digest!r} for {image}: not a sha256 digest")
    return digest


def _request(method: str, url: str, token: str | None, image: ImageTag) -> tuple[int, Message, bytes]:
    """Status, headers (looked up without regard to case: Go registries send `Www-Authenticate`) and body."""
    headers = {"Accept": MANIFEST_TYPES}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (registry URL)
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, b""
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise DigestError(f"cannot reach the registry of {image}: {err}") from None


def _anonymous_token(challenge: str, image: ImageTag) -> str:
    """A pull token from the realm of a `Bearer` challenge, asked for without credentials."""
    scheme, _, params_text = challenge.partition(" ")
    params = dict(CHALLENGE_PARAM.findall(params_text))
    if scheme.lower() != "bearer" or "realm" not in params:
        raise DigestError(f"registry of {image} wants {challenge or 'credentials'!r}, not an anonymous token")
    query = {key: params[key] for key in ("service", "scope") if key in params}
    query.setdefault("scope", f"repository:{image.repository}:pull")
    url = f"{params['realm']}?{urllib.parse.urlencode(query)}"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (the registry's realm)
            answer = json.load(response)
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as err:
        raise DigestError(f"cannot get an anonymous pull token for {image} from {params['realm']}: {err}") from None
    token = answer.get("token") or answer.get("access_token") if isinstance(answer, dict) else None
    if not token:
        raise DigestError(f"the token service of {image} answered without a token")
    return token
