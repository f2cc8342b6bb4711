"""OpenSSH public keys, parsed for real: "<type> <base64 blob> [comment]" where the blob's first field repeats the
type (RFC 4253 section 6.6; ed25519 keys RFC 8709; ecdsa keys RFC 5656). A key that only has a valid prefix would
be refused by the cloud at `pulumi up` (AWS ImportKeyPair, Azure's linuxConfiguration), after other resources
were created; here it is refused at plan time.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass

from .errors import Problem

ED25519_KEY_BYTES = 32
ECDSA_CURVES = {"ecdsa-sha2-nistp256": "nistp256", "ecdsa-sha2-nistp384": "nistp384",
                "ecdsa-sha2-nistp521": "nistp521"}
KEY_TYPES = ("ssh-ed25519", "ssh-rsa", *ECDSA_CURVES)

# Key types EC2 and Azure Linux VMs import, and the smallest RSA key they take (EC2 User Guide, "Import a public key
# to Amazon EC2"; Azure "Supported SSH key formats").
IMPORTABLE_KEY_TYPES = ("ssh-ed25519", "ssh-rsa")
RSA_MIN_BITS = 2048


@dataclass(frozen=True)
class PublicKey:
    """What the clouds check: the key type and, for RSA, the modulus size."""

    kind: str
    bits: int


def parse_public_key(text: str) -> PublicKey:
    """The key's type and size; raises ValueError saying what is wrong."""
    fields = text.strip().split()
    if len(fields) < 2 or fields[0] not in KEY_TYPES:
        raise ValueError(f"expected an OpenSSH public key `<type> <base64> [comment]` with type "
                         f"{', '.join(KEY_TYPES)}, as in your ~/.ssh/id_ed25519.pub")
    kind = fields[0]
    try:
        blob = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the key's second field is not valid base64; paste the whole line of your .pub file") from None
    reader = _Reader(blob)
    if reader.string() != kind.encode():
        raise ValueError(f"the key data does not hold a {kind} key; paste the whole line of your .pub file")
    if kind == "ssh-ed25519":
        bits = 256 if len(reader.string()) == ED25519_KEY_BYTES else 0
    elif kind == "ssh-rsa":
        reader.string()  # public exponent
        modulus = reader.string().lstrip(b"\0")
        bits = len(modulus) * 8
    else:
        curve = reader.string().decode(errors="replace")
        bits = int(curve[len("nistp"):]) if curve == ECDSA_CURVES[kind] and reader.string() else 0
    if not bits or reader.remaining():
        raise ValueError(f"the {kind} key data is truncated or malformed; paste the whole line of your .pub file")
    return PublicKey(kind, bits)


class _Reader:
    """Length-prefixed fields of an SSH wire-format blob."""

    def __init__(self, blob: bytes):
        self.blob, self.offset = blob, 0

    def string(self) -> bytes:
        if self.offset + 4 > len(self.blob):
            raise ValueError("the key data is truncated; paste the whole line of your .pub file")
        (length,) = struct.unpack(">I", self.blob[self.offset:self.offset + 4])
        start, self.offset = self.offset + 4, self.offset + 4 + length
        if self.offset > len(self.blob):
            raise ValueError("the key data is truncated; paste the whole line of your .pub file")
        return self.blob[start:self.offset]

    def remaining(self) -> int:
        return len(self.blob) - self.offset


def key_type_problems(text: str | None, importer: str, service: str) -> list[Problem]:
    """What EC2 and Azure both refuse: keys other than ssh-ed25519 and ssh-rsa, and RSA under 2048 bits.
    `importer` and `service` name the cloud in the message ("EC2 imports", "EC2 needs")."""
    if not text:
        return []
    key = parse_public_key(text)  # the model already refused keys that do not parse
    if key.kind not in IMPORTABLE_KEY_TYPES:
        return [Problem("access.ssh_public_key", key.kind, f"{importer} ssh-ed25519 and ssh-rsa keys, not ECDSA; "
                        "use `ssh-keygen -t ed25519`")]
    if key.kind == "ssh-rsa" and key.bits < RSA_MIN_BITS:
        return [Problem("access.ssh_public_key", f"ssh-rsa, {key.bits} bits", f"{service} needs RSA keys of at "
                        f"least {RSA_MIN_BITS} bits; use `ssh-keygen -t ed25519`")]
    return []
