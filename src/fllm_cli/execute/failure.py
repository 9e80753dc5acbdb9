"""The one error a tool call raises."""


class ToolFailure(Exception):
    """A tool call failed; the message is one line in fllm's words."""
