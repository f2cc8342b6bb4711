"""gpufleet components: the cluster spec, the instance catalog, one package per cloud, and the offline plan."""
