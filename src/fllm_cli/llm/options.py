"""Settings shared by the back ends that call a real model (no back end is imported here)."""

from __future__ import annotations

from dataclasses import dataclass

# How an API model is asked to choose (see ``docs/models.md``, "How API models choose"):
# ``auto`` picks the strongest mode the provider supports.
CHOICE_MODES = ("auto", "schema", "bias", "logprobs", "text")


@dataclass(frozen=True)
class ModelOptions:
    """Settings shared by the back ends that call a real model."""

    api_base: str | None = None
    temperature: float = 0.0
    timeout: float = 60.0
    retries: int = 4
    cache: bool = True
    max_cost: float | None = None
    choice_mode: str = "auto"  # one of CHOICE_MODES; only the LiteLLM back end reads it
