"""The instance catalog: GPU models, instance types and prices as data, their sanity checks, cost and selection."""

from .loader import Catalog, load_catalog
from .models import Flag, GpuModel, InstanceType, Price, PriceSource

__all__ = ["Catalog", "Flag", "GpuModel", "InstanceType", "Price", "PriceSource", "load_catalog"]
