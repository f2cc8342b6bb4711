"""The root every `gpufleet inventory` problem is named under, in a module of its own so the command's parts can
name it without importing the command."""

ROOT = "gpufleet inventory"
