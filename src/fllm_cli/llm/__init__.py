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
from fllm_cli.llm.meter import RunMeter
from fllm_cli.llm.options import ModelOptions
from fllm_cli.llm.registry import make_model, parse_model_spec

__all__ = [
    "ChoiceRequest",
    "ChoiceResult",
    "GenerateRequest",
    "Generation",
    "Model",
    "ModelOptions",
    "RunMeter",
    "TextModel",
    "Usage",
    "make_model",
    "parse_choice",
    "parse_model_spec",
]
