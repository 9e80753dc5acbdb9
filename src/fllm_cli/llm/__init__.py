"""Model back ends: one interface (choose among options, generate text) for every provider."""

from fllm_cli.llm.base import (
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    Model,
    TextModel,
    Usage,
    parse_choice,
)
from fllm_cli.llm.registry import ModelOptions, make_model

__all__ = [
    "ChoiceRequest",
    "ChoiceResult",
    "GenerateRequest",
    "Generation",
    "Model",
    "ModelOptions",
    "TextModel",
    "Usage",
    "make_model",
    "parse_choice",
]
