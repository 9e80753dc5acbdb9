"""fllm: controllable LLM planning under formal constraints."""

__version__ = "0.1.0"
