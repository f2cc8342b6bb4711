"""Facts gpufleet reads from the clouds and registries when `pulumi up` (or `pulumi preview`) runs, and pins: the
newest Azure marketplace image version, container image digests. The offline plan makes no such call and says
instead what will be resolved (`lookups.offline_lookups`)."""
