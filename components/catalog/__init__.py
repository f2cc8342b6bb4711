"""The instance catalog: GPU models, instance types and prices as data, and the selector over them."""

from .loader import Catalog, load_catalog
from .models import GpuModel, InstanceType, Price, PriceSource

__all__ = ["Catalog", "GpuModel", "InstanceType", "Price", "PriceSource", "load_catalog"]
