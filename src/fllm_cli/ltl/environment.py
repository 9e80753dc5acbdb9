"""Who fills ``:env-input`` states: tools for observations, a reader for the user, an evaluator.

Each provider gets the state and the steps so far and returns the text (or asks to end the run,
as the user does at end of input). Which provider serves which state is decided once, from the
state's name and tag, so a spec with an unknown environment state fails before any model call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fllm_cli.errors import UsageError
from fllm_cli.ltl.spec import AgentSpec, StateDecl
from fllm_cli.ltl.tools import Tool, run_tool


@dataclass
class EnvText:
    """What the environment wrote, and whether it asked to stop."""

    text: str
    end: bool = False
    ok: bool = True
    detail: dict[str, Any] = field(default_factory=dict)


class StepView(Protocol):
    """The parts of a run step that providers read."""

    state: str
    tag: str
    text: str
    source: str


class Provider(Protocol):
    """Fill one environment state."""

    def __call__(self, state: StateDecl, steps: Sequence[StepView]) -> EnvText:
        """Return the state's text."""


_ACTION_LINE = re.compile(r"^\s*Action\s*:\s*(.*?)\s*$", re.MULTILINE | re.IGNORECASE)
_INPUT_LINE = re.compile(r"^\s*Action\s+Input\s*:\s*(.*?)\s*$", re.MULTILINE | re.IGNORECASE)


def _since_env(steps: Sequence[StepView]) -> list[StepView]:
    out: list[StepView] = []
    for step in reversed(steps):
        if step.source == "env":
            break
        out.append(step)
    return out[::-1]


def find_action(steps: Sequence[StepView]) -> tuple[str | None, str | None]:
    """Return the action and its input written since the last environment step.

    They come from ``Action:``/``Action Input:`` states when the spec has them, or else from
    such lines inside the model's text (the ablated ReAct agent has no Action states).
    """
    recent = _since_env(steps)
    action = next((s.text for s in reversed(recent) if s.tag.strip().lower() == "action:"), None)
    given = next(
        (s.text for s in reversed(recent) if s.tag.strip().lower() == "action input:"), None
    )
    text = "\n".join(s.text for s in recent)
    if action is None:
        found = _ACTION_LINE.findall(text)
        action = found[-1] if found else None
    if given is None:
        found = _INPUT_LINE.findall(text)
        given = found[-1] if found else None
    return (action or None), given


@dataclass
class ToolProvider:
    """Run the chosen action on its input."""

    tools: dict[str, Tool]

    def __call__(self, state: StateDecl, steps: Sequence[StepView]) -> EnvText:
        """Return the tool's observation, or an error observation the agent can read."""
        action, given = find_action(steps)
        if action is None:
            return EnvText("Error: no action was given; name a tool after 'Action:'.", ok=False)
        if given is None or not given.strip():
            return EnvText(
                f"Error: the action '{action}' has no input; write it after 'Action Input:'.",
                ok=False,
                detail={"tool": action},
            )
        text, ok = run_tool(self.tools, action, given)
        return EnvText(text, ok=ok, detail={"tool": action, "input": given})


@dataclass
class UserProvider:
    """Read the user's turn; ``None`` from the reader (end of input) ends the run."""

    read: Callable[[str], str | None]

    def __call__(self, state: StateDecl, steps: Sequence[StepView]) -> EnvText:
        """Return the line the user typed."""
        line = self.read(state.text)
        if line is None or line.strip().lower() in ("/exit", "/quit"):
            return EnvText("", end=True)
        return EnvText(line.strip())


@dataclass
class EvaluatorProvider:
    """Judge the last answer against a known expected answer, when one is given."""

    expected: str | None = None

    def __call__(self, state: StateDecl, steps: Sequence[StepView]) -> EnvText:
        """Say whether the last Answer matches the expected one."""
        answer = next((s.text for s in reversed(steps) if s.tag.strip().lower() == "answer:"), "")
        if self.expected is None:
            return EnvText("No evaluator is configured; the answer cannot be checked.")
        if _same(answer, self.expected):
            return EnvText("The answer is correct.")
        return EnvText("The answer is incorrect.", ok=False)


def _same(answer: str, expected: str) -> bool:
    def norm(text: str) -> str:
        return " ".join(re.sub(r"[^\w.]", " ", text.lower()).split()).rstrip(".")

    return norm(answer) == norm(expected)


@dataclass
class Environment:
    """Dispatch each environment state to its provider."""

    providers: dict[str, Provider]

    def fill(self, state: StateDecl, steps: Sequence[StepView]) -> EnvText:
        """Fill ``state``."""
        return self.providers[state.name](state, steps)


def provider_kind(state: StateDecl) -> str | None:
    """Return 'tool', 'user' or 'evaluator' for an environment state, from its name and tag."""
    words = f"{state.name} {state.text}".lower()
    if "observ" in words or "result" in words:
        return "tool"
    if "user" in words or "human" in words:
        return "user"
    if "evaluat" in words or "feedback" in words:
        return "evaluator"
    return None


def default_environment(
    spec: AgentSpec,
    tools: dict[str, Tool],
    read_user: Callable[[str], str | None],
    expected: str | None = None,
) -> Environment:
    """Return the environment for ``spec``; an environment state nobody can fill is a UsageError."""
    providers: dict[str, Provider] = {}
    for state in spec.states:
        if not state.env_input:
            continue
        kind = provider_kind(state)
        if kind == "tool":
            providers[state.name] = ToolProvider(tools)
        elif kind == "user":
            providers[state.name] = UserProvider(read_user)
        elif kind == "evaluator":
            providers[state.name] = EvaluatorProvider(expected)
        else:
            raise UsageError(
                f"no environment provider for state '{state.name}'",
                hint="environment states are served by name: Observation (tools), User, Evaluator",
            )
    return Environment(providers)
