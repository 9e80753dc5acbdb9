"""Settings shared by the back ends that call a real model (no back end is imported here)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelOptions:
    """Settings shared by the back ends that call a real model."""

    api_base: str | None = None
    temperature: float = 0.0
    timeout: float = 60.0
    retries: int = 4
    cache: bool = True
    max_cost: float | None = None
