"""One entry point for running an agent, shared by the CLI and the benchmark script."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fllm_cli.content import Language, LanguageError, language_from_text
from fllm_cli.errors import SpecError, UsageError
from fllm_cli.llm.base import Model
from fllm_cli.ltl.automaton import Automaton, compile_spec
from fllm_cli.ltl.environment import default_environment
from fllm_cli.ltl.examples import read_examples
from fllm_cli.ltl.languages import content_rules
from fllm_cli.ltl.runtime import AgentRun, AgentRunner, Budget, Observer, header_prompt
from fllm_cli.ltl.spec import AgentSpec, load_spec
from fllm_cli.ltl.tools import ToolContext, build_tools, tool_input_languages
from fllm_cli.textio import read_text


@dataclass
class AgentOptions:
    """Everything a run needs besides the spec, the question and the model."""

    tools: Sequence[str] = ("calculator",)
    tool_modules: Sequence[str] = ()
    corpus: str | None = None
    examples: str | None = None
    shots: int | None = None
    budget: Budget = field(default_factory=Budget)
    expected: str | None = None
    answer: str | None = None  # the answer's language: number, yes|no, regex:..., gbnf@FILE ...
    tool_languages: bool = True  # constrain Action Input by the tool's declared input language


def answer_language(spelling: str | None) -> Language | None:
    """Read ``--answer`` (a name, ``regex:``/``json-schema:``/``gbnf:`` text, ``KIND@FILE``, or a
    regex); a bad one is a one-line UsageError."""
    if spelling is None:
        return None
    try:
        return language_from_text(spelling, lambda path: read_text(path, "--answer file"))
    except LanguageError as exc:
        raise UsageError(f"--answer: {exc}") from None


def load_agent(path: str) -> tuple[AgentSpec, Automaton]:
    """Load a spec and compile it; an empty behaviour is a SpecError."""
    spec = load_spec(path)
    automaton = compile_spec(spec)
    if automaton.empty:
        from fllm_cli.ltl import validate_agent_spec

        raise SpecError(validate_agent_spec(path))
    return spec, automaton


def _no_user(tag: str) -> str | None:
    return None


def run_agent(
    path: str,
    question: str,
    model: Model,
    options: AgentOptions | None = None,
    observer: Observer | None = None,
    read_user: Callable[[str], str | None] = _no_user,
) -> AgentRun:
    """Load ``path`` and run it on ``question`` with ``model``."""
    options = options or AgentOptions()
    spec, automaton = load_agent(path)
    uses_tools = any(s.tool_choices for s in spec.states) or any(
        s.env_input and "observ" in f"{s.name} {s.text}".lower() for s in spec.states
    )
    tools = (
        build_tools(options.tools, ToolContext(options.corpus), options.tool_modules)
        if uses_tools
        else {}
    )
    if uses_tools and not tools:
        raise UsageError(
            f"agent '{spec.name}' calls tools, but none were given", hint="pass --tools"
        )
    environment = default_environment(spec, tools, read_user, options.expected)
    examples = read_examples(options.examples, options.shots)
    header = header_prompt(spec, question, tools, examples)
    languages = tool_input_languages(tools) if options.tool_languages else {}
    rules = content_rules(spec, languages, answer_language(options.answer))
    runner = AgentRunner(
        spec,
        automaton,
        model,
        environment,
        header,
        tuple(tools),
        options.budget,
        observer,
        rules,
    )
    return runner.run(question)
