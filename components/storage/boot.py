"""Maps `storage:` into the node's `BootConfig` fields, and puts a filesystem's address into rendered user data.

A filesystem gpufleet creates has its address (FSx DNS name and mount name, AMLFS MGS address, Filestore IP)
only once it exists, so the user data is rendered with `SOURCE_PLACEHOLDER` and `user_data_with_source`
substitutes the address (a `pulumi.Output`) before the cloud's encoding. Clusters without shared storage keep a
plain string, so their user data is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import pulumi

from gpufleet.cloud_init.storage import SOURCE_PLACEHOLDER, ScratchArray, SharedMount

from ..spec import ClusterSpec


def storage_boot_fields(spec: ClusterSpec) -> dict:
    shared, nvme = spec.storage.shared, spec.storage.local_nvme
    return {
        "shared_storage": SharedMount(spec.cloud, shared.kind, shared.mount_path) if shared else None,
        "local_nvme": ScratchArray(nvme.mount_path, nvme.container_data_root) if nvme.enabled else None,
    }


def user_data_with_source(text: str, source: pulumi.Input[str] | None,
                          encode: Callable[[str], str]) -> pulumi.Input[str]:
    """`encode(text)` with the shared filesystem's address in place of the placeholder; a plain string when the
    cluster mounts nothing."""
    if source is None or SOURCE_PLACEHOLDER not in text:
        return encode(text)
    return pulumi.Output.from_input(source).apply(lambda address: encode(text.replace(SOURCE_PLACEHOLDER, address)))
