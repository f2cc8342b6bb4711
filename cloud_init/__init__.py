"""GPU node software stack: a frozen `BootConfig` in, cloud-config text out.

Real files under `files/` (scripts, systemd units, config files) are what a node runs; `render_cloud_config`
only selects and assembles them, and writes the node's parameters to /etc/gpufleet/node.env.
This package never imports `components`: the cloud components build the `BootConfig` (see components/boot.py).
"""

from .config import BootConfig, IsolationConfig, MpsConfig
from .encode import (
                     AWS_USER_DATA_MAX_BYTES,
                     AZURE_CUSTOM_DATA_MAX_BYTES,
                     GCP_METADATA_VALUE_MAX_BYTES,
                     LIMITS,
                     encode_user_data,
                     measured_size,
)
from .render import render_cloud_config

__all__ = ["AWS_USER_DATA_MAX_BYTES", "AZURE_CUSTOM_DATA_MAX_BYTES", "BootConfig", "GCP_METADATA_VALUE_MAX_BYTES",
           "IsolationConfig", "LIMITS", "MpsConfig", "encode_user_data", "measured_size", "render_cloud_config"]
