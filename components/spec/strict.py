"""The base of every spec model: unknown keys are refused, values are never coerced silently."""

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Rejects typos in stack files (`extra="forbid"`) and freezes the parsed spec."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, use_attribute_docstrings=True)
