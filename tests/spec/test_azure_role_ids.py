"""Azure built-in role definition GUIDs gpufleet assigns or refuses, pinned to Microsoft's table.

Source: MicrosoftDocs/azure-docs, articles/role-based-access-control/built-in-roles.md @ 00a583295ba7 (ms.date
04/09/2026), read 2026-12-03: each row `| [Role name](...) | description | GUID |`. Built-in role ids are the same in
every Azure cloud. A wrong GUID would assign some other role (or fail at deploy), so the copies in other modules are
checked against the same table.
"""

from __future__ import annotations

from gpufleet.azure.private_vm import KEY_VAULT_SECRETS_USER
from gpufleet.azure.serving import BLOB_DATA_READER
from gpufleet.spec.permissions import AZURE_BUILTIN_ROLES
from gpufleet.spec.storage_rules import ADMIN_AZURE, GUID

# Copied by hand from the source above (role name as Microsoft writes it -> ID column).
MICROSOFT_BUILT_IN_ROLES = {
    "AcrPull": "7f951dda-4ed3-4680-a7ca-43fe172d538d",
    "Reader": "acdd72a7-3385-48ef-bd42-f606fba81ae7",
    "Storage Blob Data Reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    "Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    "Key Vault Secrets User": "4633458b-17de-408a-b874-0445c86b69e6",
    "Monitoring Metrics Publisher": "3913510d-42f4-4e42-8a64-420c390055eb",
    "Owner": "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
    "Contributor": "b24988ac-6180-42a0-ab88-20f7382dd24c",
    "User Access Administrator": "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
    "Role Based Access Control Administrator": "f58310d9-a9f6-439a-9e8d-f62e7b41a168",
}
PRIVILEGED = ("Owner", "Contributor", "User Access Administrator", "Role Based Access Control Administrator")


def test_every_role_gpufleet_names_has_microsofts_guid():
    by_name = {name.lower(): guid for name, guid in MICROSOFT_BUILT_IN_ROLES.items()}
    assert AZURE_BUILTIN_ROLES == {name: by_name[name] for name in AZURE_BUILTIN_ROLES}


def test_the_copies_in_cloud_modules_match_the_table():
    assert KEY_VAULT_SECRETS_USER == MICROSOFT_BUILT_IN_ROLES["Key Vault Secrets User"]
    assert BLOB_DATA_READER == MICROSOFT_BUILT_IN_ROLES["Storage Blob Data Reader"]

def test_every_privileged_role_is_refused_by_name_and_by_guid():
    """A GUID missing here would let an admin role through `access.allow_admin` unasked."""
    assert {role for role in ADMIN_AZURE if GUID.match(role)} == {MICROSOFT_BUILT_IN_ROLES[n] for n in PRIVILEGED}
    assert {role for role in ADMIN_AZURE if not GUID.match(role)} == {n.lower() for n in PRIVILEGED}
