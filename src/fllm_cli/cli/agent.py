"""``fllm agent`` (run an LTL-specified agent) and ``fllm check-trace`` (validate transcripts)."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from fllm_cli import api
from fllm_cli.cli import views
from fllm_cli.cli.common import (
    read_text_arg,
    stderr_console,
    stdout_console,
    time_parts,
    write_atomic,
)
from fllm_cli.cli.manhelp import examples
from fllm_cli.cli.options import (
    MaxCostOpt,
    ModelFlags,
    ModelOpt,
    OutOpt,
    QuietOpt,
    check_format,
    flag_groups,
    format_option,
    renamed,
)
from fllm_cli.cli.progress import LiveStatus
from fllm_cli.cli.safe import plain, safe, safe_json
from fllm_cli.errors import IncompleteRun, UsageError

RUN_FORMATS = ("rich", "json", "transcript")
CHECK_FORMATS = ("rich", "json")


class _Recorder(api.AgentObserver):
    """In rich mode, print each step as soon as it is written (the trace is the meter's)."""

    def __init__(self, console: Console | None, echo_user: bool) -> None:
        self.console = console
        self.echo_user = echo_user

    def filled(self, step: api.AgentStep) -> None:

        if self.console is None:
            return
        if step.source == "env" and not self.echo_user and "user" in step.state.lower():
            return
        self.console.print(views.step_text(step), soft_wrap=True)  # a Text: no markup; see safe.py


def _reader(console: Console | None) -> Any:
    """Return the function that reads a user turn from standard input (None at end of input)."""
    interactive = sys.stdin.isatty()

    def read(tag: str) -> str | None:
        try:
            if interactive:
                return (console or Console()).input(f"[bold cyan]{tag}[/] ")
            line = sys.stdin.readline()
            return line.rstrip("\n") if line else None
        except EOFError:
            return None

    return read


def _split_names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


@flag_groups
def agent_command(
    spec: str = typer.Argument(..., help="Agent spec (.sexp, or YAML with an 'agent:' key)."),
    question: str = typer.Argument("", help="The task; optional for agents with a User state."),
    model: ModelOpt = None,
    tools: str = typer.Option(
        "calculator", "--tools", help="Comma-separated tools: calculator, search, lookup, plugins."
    ),
    tool_module: list[str] = typer.Option(
        [], "--tool-module", help="Python module with TOOLS or make_tools(context)."
    ),
    corpus: str = typer.Option(
        None, "--corpus", help="JSONL corpus {title, text} for search/lookup."
    ),
    examples: str = typer.Option(
        None, "--examples", help="Few-shot examples file (e.g. prompts/react_examples.txt)."
    ),
    shots: int = typer.Option(None, "--shots", min=0, help="Use only the first N examples."),
    max_states: int = typer.Option(
        50, "--max-states", min=1, help="Most states in a run (the closing path included)."
    ),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1, hidden=True),
    max_loops: int = typer.Option(
        3, "--max-loops", min=1, help="Most visits of the start state (the paper's 3)."
    ),
    max_tokens: int = typer.Option(
        128, "--max-tokens", min=1, help="Most tokens the model writes per state."
    ),
    max_stop: int = typer.Option(
        0, "--max-stop", min=0, help="Send at most N tags as stop sequences (0: all)."
    ),
    expected: str = typer.Option(
        None, "--expected", help="Expected answer, for an Evaluator state (Reflexion)."
    ),
    answer: str = typer.Option(
        None,
        "--answer",
        help="Language of the answer: number, integer, yes-no, a regex such as 'yes|no', "
        "regex:/json-schema:/gbnf: TEXT, or json-schema@FILE / gbnf@FILE.",
    ),
    content_retries: int = typer.Option(
        2,
        "--content-retries",
        min=0,
        help="Ask again at most N times when a reply is outside its state's language.",
    ),
    fmt: str = format_option(RUN_FORMATS),
    out_file: OutOpt = None,
    trace: str = typer.Option(
        None, "--trace", help="Write every model call, choice and tool run as JSONL."
    ),
    flags: ModelFlags = ModelFlags(),
    max_cost: MaxCostOpt = None,
    max_seconds: float | None = typer.Option(
        None,
        "--max-seconds",
        min=1.0,
        help="Wall-clock budget; once spent the run closes by the shortest valid path.",
    ),
    quiet: QuietOpt = False,
) -> None:
    """Run an agent whose behaviour is an LTL formula; every transcript satisfies it."""
    fmt = check_format(fmt, RUN_FORMATS, {"text": "transcript"})
    states = renamed(max_states, max_steps, "--max-states", "--max-steps", quiet)
    agent_spec, _ = api.load_agent(spec)
    has_user = any(s.env_input and "user" in s.name.lower() for s in agent_spec.states)
    if not question and not has_user:
        raise UsageError(f"agent '{agent_spec.name}' needs a QUESTION argument")
    out = stdout_console()
    live = out if fmt == "rich" and not quiet else None
    recorder = _Recorder(live, echo_user=not sys.stdin.isatty())
    options = api.AgentOptions(
        tools=_split_names(tools),
        tool_modules=tool_module,
        corpus=corpus,
        examples=examples,
        shots=shots,
        budget=api.AgentBudget(
            states, max_loops, max_tokens, max_stop, max_seconds, content_retries
        ),
        expected=expected,
        answer=answer,
    )
    api.answer_language(answer)  # a bad --answer is misuse: fail before loading the model
    # An agent that talks with the user reads the terminal; a status line would fight it.
    status = LiveStatus("agent", enabled=not quiet and not has_user)
    backend = status.observe(model, flags.options(), max_cost=max_cost)
    run = None
    try:
        if live is not None:
            live.print(views.legend())
            if question:
                live.print(plain(f"Question: {question}", style="bold"))
        with status:
            run = api.run_agent(
                spec, question, backend, options, recorder, _reader(live or stderr_console())
            )
    finally:
        backend.close()
        if trace:  # every model call, env turn and step, kept even when the run fails
            if run is not None:
                backend.event(
                    "run", **{k: v for k, v in api.agent_json(run).items() if k != "steps"}
                )
            lines = [json.dumps(r, ensure_ascii=False) for r in backend.records]
            write_atomic(trace, "\n".join(lines) + "\n")
    if out_file:
        body = api.agent_transcript(run) if fmt == "transcript" else None
        write_atomic(
            out_file, body or json.dumps(api.agent_json(run), indent=2, ensure_ascii=False) + "\n"
        )
    if not quiet:
        _show_run(run, fmt, out, backend.info())
    if not has_user and not (run.answer or "").strip():
        # A task agent that gave no answer did not do what was asked: say so, exit non-zero.
        how = "reached its final state" if run.reached_final else f"was ended by the {run.ended_by}"
        raise IncompleteRun(f"the agent {how} without an answer", hint=_budget_hint(run))


def _budget_hint(run: Any) -> str | None:
    hit = getattr(run.stats, "budget_hit", None)
    return f"its {hit} budget ran out; raise it" if hit else None


def _show_run(run: Any, fmt: str, out: Console, backend: dict[str, Any]) -> None:
    """Print a finished run in the chosen format."""
    if fmt == "json":
        print(safe_json(json.dumps(api.agent_json(run), indent=2, ensure_ascii=False)))
    elif fmt == "transcript":
        sys.stdout.write(safe(api.agent_transcript(run)))
    else:
        out.print()
        answer = run.answer if run.answer is not None else "(none)"
        out.print(Text.assemble(("answer:", "bold"), " ", plain(answer)), highlight=False)
        state = "reached the final state" if run.reached_final else f"ended by the {run.ended_by}"
        took = time_parts(run.stats.seconds, backend)
        line = f"{run.agent}: {state}; {api.agent_stats_line(run)}{took}"
        out.print(plain(line, style="dim"), soft_wrap=True)


def check_trace_command(
    spec: str = typer.Argument(..., help="Agent spec (.sexp or YAML)."),
    file: str = typer.Argument(..., help="Transcript file, '-' for standard input."),
    split: str = typer.Option(
        r"^(Question|Claim):",
        "--split",
        help="Regex of lines that start a new example ('' for one trace).",
    ),
    tools: str = typer.Option(
        None,
        "--tools",
        help="Tool names allowed in states restricted to tools (their input languages apply).",
    ),
    answer: str = typer.Option(
        None, "--answer", help="Language the answer must belong to (as for 'fllm agent')."
    ),
    tool_module: list[str] = typer.Option(
        [],
        "--tool-module",
        help="Python module with TOOLS or make_tools(context): their input languages apply.",
    ),
    fmt: str = format_option(CHECK_FORMATS),
    out_file: OutOpt = None,
    quiet: QuietOpt = False,
) -> int:
    """Check that transcripts follow an agent spec; report the first violation of each example."""
    fmt = check_format(fmt, CHECK_FORMATS, {"text": "rich"})
    agent = api.load_agent(spec)
    agent_spec = agent[0]
    text = read_text_arg(file)
    results = api.check_trace(
        agent,
        text,
        split=split or None,
        tools=tuple(_split_names(tools)) if tools else None,
        tool_modules=tool_module,
        answer=answer,
    )
    failed = [r for r in results if not r.ok]
    if fmt == "json" or out_file:
        data = [
            {
                "line": r.line,
                "states": [s.state for s in r.segments],
                "ok": r.ok,
                "violation": None
                if r.violation is None
                else {
                    "line": r.violation.line,
                    "message": r.violation.message,
                    "allowed": list(r.violation.allowed),
                },
            }
            for r in results
        ]
        text = json.dumps({"file": file, "examples": data, "ok": not failed}, indent=2) + "\n"
        if out_file:
            write_atomic(out_file, text)
        if fmt == "json" and not quiet:
            sys.stdout.write(text)
    if fmt == "json" or quiet:
        return 1 if failed else 0
    out = stdout_console()
    for number, r in enumerate(results, 1):
        if r.violation is None:
            out.print(
                f"[green]ok[/]   example {number} (line {r.line}): {len(r.segments)} states",
                highlight=False,
            )
            continue
        v = r.violation
        allowed = f"; allowed here: {', '.join(v.allowed)}" if v.allowed else ""
        line = plain(f" {file}:{v.line}: example {number}: {v.message}{allowed}")
        out.print(Text.assemble(("FAIL", "red"), line), highlight=False, soft_wrap=True)
    verdict = (
        "[green]all examples follow the spec[/]"
        if not failed
        else f"[red]{len(failed)} of {len(results)} example(s) violate the spec[/]"
    )
    out.print(f"{agent_spec.name}: {verdict}", highlight=False)
    return 1 if failed else 0


AGENT_EXAMPLES = examples(
    'fllm agent domains/agents/react.sexp "What is 17% of 240, plus 12?" --answer number',
    "fllm agent domains/agents/chat_bot.sexp   # talks with you on the terminal",
)
CHECK_EXAMPLES = examples(
    "fllm check-trace domains/agents/react.sexp prompts/react_examples.txt",
    "fllm check-trace domains/agents/react.sexp run.txt --tools calculator --answer number",
)


def register(app: typer.Typer) -> None:
    """Add ``agent`` and ``check-trace`` to the CLI."""
    app.command("agent", epilog=AGENT_EXAMPLES)(agent_command)

    def _check(*args: Any, **kwargs: Any) -> None:
        raise typer.Exit(check_trace_command(*args, **kwargs))

    import functools

    app.command("check-trace", epilog=CHECK_EXAMPLES)(functools.wraps(check_trace_command)(_check))
