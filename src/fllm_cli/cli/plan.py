"""``fllm plan``: automaton-guided planning with a model."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.table import Table
from rich.text import Text

from fllm_cli import api
from fllm_cli.cli import views
from fllm_cli.cli.common import (
    read_json_arg,
    stderr_console,
    stdout_console,
    time_parts,
    write_atomic,
)
from fllm_cli.cli.manhelp import examples
from fllm_cli.cli.options import (
    OUTPUT_HELP,
    ConstraintsOpt,
    DataOpt,
    MaxCostOpt,
    MaxSecondsOpt,
    ModelFlags,
    ModelOpt,
    OutOpt,
    QuietOpt,
    TimeLimitOpt,
    check_format,
    flag_groups,
    format_option,
    renamed,
)
from fllm_cli.cli.progress import LiveStatus
from fllm_cli.cli.safe import plain, safe, safe_json
from fllm_cli.errors import FllmError, IncompleteRun, UsageError

FORMATS = api.PLAN_FORMATS

VAR_HELP = "A scenario variable: NAME=VALUE (repeatable)."


def stats_line(stats: dict[str, Any]) -> str:
    """Return the one-line stats summary."""
    text = (
        f"{stats['llm_calls']} LLM calls, {stats['choice_points']} choice points, "
        f"{stats['forced_moves']} forced moves, {stats['backtracks']} backtracks, "
        f"{stats['fallbacks']} fallbacks, "
        f"{stats['prompt_tokens'] + stats['completion_tokens']} tokens, "
        f"${stats['cost_usd']:.4f}"
    )
    text += time_parts(stats["seconds"], stats.get("backend") or {})
    if stats.get("cached"):
        text += f" ({stats['cached']} cached)"
    if stats.get("budget_exhausted"):
        text += f" [budget {stats['budget_exhausted']} ran out: later choices were defaults]"
    return text


def _on_event(status: LiveStatus) -> Any:
    """Return the planner's event callback that keeps the live status current."""

    def on_event(name: str, data: dict[str, Any]) -> None:
        if name == "choice":
            status.stage(f"choice point {data['number']} ({len(data['options'])} options)")
        elif name == "backtrack":
            status.stage(f"backtracking ({data['why']})")

    return on_event


@flag_groups
def plan(
    spec: str = typer.Argument(..., help="Domain spec, e.g. domains/openagi.yaml."),
    task: str = typer.Argument(..., help="The task, in natural language."),
    inputs: list[str] = typer.Option(
        [],
        "--input",
        "-i",
        help="A task input: MODALITY or NAME=MODALITY (repeatable); omitted: the model is asked.",
    ),
    output: str | None = typer.Option(
        None, "--output", help=OUTPUT_HELP + " Omitted: the model is asked."
    ),
    model: ModelOpt = None,
    flags: ModelFlags = ModelFlags(),
    fmt: str = format_option(FORMATS),
    out_file: OutOpt = None,
    trace_file: str | None = typer.Option(
        None, "--trace", metavar="FILE", help="Record every choice point to FILE (JSONL)."
    ),
    max_llm_calls: int | None = typer.Option(
        None,
        "--max-llm-calls",
        min=0,
        help="Model calls allowed; then the shortest plan.",
    ),
    max_backtracks: int = typer.Option(100, "--max-backtracks", min=0, help="Backtracks allowed."),
    max_moves: int = typer.Option(10_000, "--max-moves", min=1, help="Automaton moves allowed."),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1, hidden=True),
    max_cost: MaxCostOpt = None,
    max_seconds: MaxSecondsOpt = None,
    time_limit: TimeLimitOpt = None,
    quiet: QuietOpt = False,
    explain: bool = typer.Option(
        False,
        "--explain",
        help="Also say why: the interface as read, what made each step relevant (the plan JSON"
        ' always holds it, as "why").',
    ),
    var: list[str] = typer.Option([], "--var", help=VAR_HELP),
    data_file: DataOpt = None,
    constraints_file: ConstraintsOpt = None,
    objective: str | None = typer.Option(
        None,
        "--objective",
        help="Data domains: cheapest plans the least costly trip within every rule (no model "
        "asked); choose leaves it to the request's words, else to the model.",
    ),
    search: str = typer.Option(
        api.DEFAULT_SEARCH,
        "--search",
        help="meaning: rank whole valid plans by what the request means, the model breaking "
        "ties; words: the same by shared words; greedy: ask at every choice point (the paper). "
        "'beam' is 'meaning'.",
    ),
    run: bool = typer.Option(
        False, "--run", help="Then carry it out (as fllm run): --bind, --value."
    ),
    bind: str | None = typer.Option(
        None, "--bind", metavar="FILE", help="With --run: how each tool is called."
    ),
    values: list[str] = typer.Option(
        [], "--value", metavar="NAME=VALUE", help="With --run: a task input's value."
    ),
    allow_fallbacks: bool = typer.Option(
        False,
        "--allow-fallbacks",
        help="Accept a plan in which over a quarter of the model's replies named no option "
        "(each took the first); by default such a run fails.",
    ),
) -> None:
    """Make a model plan inside the domain's automaton; the plan is valid by construction.

    Moves that lead to dead ends are never offered; a single feasible move is taken unasked.
    """
    fmt = check_format(fmt, FORMATS + DATA_FORMATS)
    data = read_json_arg(data_file) if data_file else None
    given = read_json_arg(constraints_file) if constraints_file else None
    if objective is not None:
        if objective not in OBJECTIVES:
            raise UsageError(
                f"--objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}"
            )
        if given is not None and not isinstance(given, dict):
            raise UsageError("--constraints: the request's values must be a JSON object")
        given = {**(given or {}), "objective": None if objective == "choose" else objective}
    moves = renamed(max_moves, max_steps, "--max-moves", "--max-steps", quiet)
    max_seconds = time_limit if time_limit is not None else max_seconds
    domain = api.load_domain(spec)
    variables = api.parse_vars(var)
    options = flags.options(max_cost)
    status = LiveStatus("planning", enabled=not quiet)
    backend = status.observe(model, options, max_seconds, max_cost=max_cost)
    trace: list[dict[str, Any]] = []
    try:
        with status:
            result = api.plan_task(
                domain,
                task,
                backend,
                inputs=inputs,
                output=output,
                variables=variables,
                budgets=api.Budgets(max_llm_calls, max_backtracks, moves),
                options=options,
                on_event=_on_event(status),
                trace=trace,
                data=data,
                request=given,
                search=search,
                allow_fallbacks=allow_fallbacks,
            )
    except FllmError as exc:
        if trace_file:
            _write_trace(trace_file, trace)
        if out_file and exc.partial is not None and fmt in ("json", "rich"):
            try:
                kept = _write_partial(out_file, exc, task, domain.name, api.model_name(model))
                note = f"the steps so far are in {kept}"
            except UsageError as failed:  # the planner's error is the one to report
                note = f"the steps so far were not kept: {failed.message}"
            exc.hint = "; ".join(filter(None, [exc.hint, note]))
        raise
    finally:
        backend.close()
    doc = result.document
    doc["model"] = api.model_name(model)
    info = backend.info()
    if info:
        doc["stats"]["backend"] = info
    if trace_file:
        _write_trace(trace_file, trace)
    if doc.get("kind") == "data" or fmt in DATA_FORMATS:
        emit_data_plan(doc, fmt, out_file, quiet)
        return
    outcome = _run_planned(doc, bind, values, model, quiet) if run else None
    _emit(doc, result, fmt, out_file, quiet)
    if explain and not quiet:
        _explain(doc)
    elif not quiet and fmt in ("rich", "text"):
        _say_interface(doc)
    if outcome is not None:
        _report_run(outcome, fmt, quiet)


def _run_planned(
    doc: dict[str, Any], bind: str | None, values: list[str], model: str | None, quiet: bool
) -> Any:
    """Carry out the plan just made; its run goes into the plan document under "run"."""
    from fllm_cli.cli.tools import execute

    if not bind:
        raise UsageError("--run needs --bind FILE (how each tool is called)")
    given = api.input_values(values, doc, "--value")
    outcome = execute(doc, bind, given, None, model, 4, 2, quiet)
    doc["run"] = outcome.as_dict()
    return outcome


def _report_run(outcome: Any, fmt: str, quiet: bool) -> None:
    """Show the run's result after the plan; exit 1 when no valid plan was left."""
    if not quiet and fmt == "rich" and outcome.ok:
        value = outcome.output if isinstance(outcome.output, str) else json.dumps(outcome.output)
        stdout_console().print(Text.assemble(("Result", "bold"), ": ", plain(value)))
    if not outcome.ok:
        raise IncompleteRun(outcome.message)


def _say_interface(doc: dict[str, Any]) -> None:
    """Say on standard error what the plan takes and gives when fllm read that from the
    request: it is what a new wording most often gets wrong, and the flags fix it."""
    reading = (doc.get("why") or {}).get("interface") or {}
    how = reading.get("how")
    if not how or how == "given":
        return
    given = dict(doc.get("inputs") or {})
    takes = ", ".join(n if n == m else f"{n} ({m})" for n, m in given.items()) or "no input"
    close = reading.get("close")
    if close:  # a near tie: the reading is unsure, and the user should know the alternative
        other = f"{', '.join(close['inputs']) or 'no input'} -> {close['output']}"
        how = f"{how}; unsure, {other} scores close behind"
    line = (
        f"Read as: {takes} -> {doc.get('output')} ({how}); "
        "if that is not what you meant, give --input and --output"
    )
    stderr_console().print(plain(line, style="dim"), highlight=False)


def _explain(doc: dict[str, Any]) -> None:
    """Print the plan's "why" on standard error, so piped plans stay clean."""
    err = stderr_console()
    why = doc.get("why") or {}
    err.print(Text("Why", style="bold"))
    reading = why.get("interface") or {}
    if reading:
        line = f"  interface: {reading.get('how', 'given')}"
        ranked = reading.get("ranked") or []
        if ranked:
            shown = [
                f"{', '.join(r['inputs'])} -> {r['output']} ({r['score']:+.2f})" for r in ranked
            ]
            line += "; " + " | ".join(shown)
        first, last = reading.get("first_asked"), reading.get("last_asked")
        if first:
            needs = ", ".join(first["inputs"])
            line += f'; the first part asking for a tool, "{first["part"]}", needs {needs}'
        if last:
            line += f'; the last part asking for a tool, "{last["part"]}", wants {last["output"]}'
        learned = reading.get("learned_reading")
        if learned:
            given = [f"{t} {p:.0%}" for t, p in learned["given"].items() if p >= 0.5]
            wanted, chance = max(learned["wanted"].items(), key=lambda kv: kv[1])
            line += (
                f"; the learned reading: given {', '.join(given) or 'nothing clear'}, "
                f"wanted {wanted} {chance:.0%}"
            )
        for key, role in (("only_given", "an input"), ("only_wanted", "the output")):
            for name in reading.get(key) or []:
                line += f"; {name} is named and can only be {role}"
        for name in reading.get("named_after_made") or []:
            line += f"; {name} is named only after a part asking to make it, so likely not given"
        err.print(plain(line))
    steps = why.get("steps")
    if steps is None:
        err.print(plain(f"  steps: chosen by the model ({doc.get('search', 'greedy')} search)"))
        return
    if why.get("plan"):
        err.print(plain(f"  plan: {why['plan']}"))
    for step in steps:
        found = [f'"{e["text"]}" ({e["signal"]} {e["weight"]:.2f})' for e in step["evidence"]]
        reason = ", ".join(found) if found else "nothing in the request: the types need it"
        err.print(plain(f"  {step['tool']} ({step['net']:+.2f}): {reason}"))


def _write_partial(path: str, exc: FllmError, task: str, domain: str, model: str) -> str:
    """Keep what a failed run produced, marked partial and invalid, beside ``path`` (which is
    left as it was: a plan from an earlier run is not lost); return where it went."""
    target = Path(path)
    kept = str(target.with_name(f"{target.stem}.partial.json"))
    partial = dict(exc.partial or {})
    stats = partial.pop("stats", None)
    doc = {
        "partial": True,
        "valid": False,
        "error": exc.message,
        "task": task,
        "domain": domain,
        "model": model,
        **partial,
        "stats": stats.as_dict() if hasattr(stats, "as_dict") else stats,
    }
    write_atomic(kept, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    return kept


def _write_trace(path: str, records: list[dict[str, Any]]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def _emit(
    doc: dict[str, Any], result: api.PlanResult, fmt: str, out_file: str | None, quiet: bool
) -> None:
    text = api.export_plan(doc, fmt)
    if _written(text, fmt, out_file, quiet, lambda: _terminal_export(doc, fmt)):
        return
    out = stdout_console()
    out.print(Text.assemble(("Plan", "bold"), " for: ", plain(doc["task"])))
    if result.derivation is not None:
        out.print(views.derivation_tree(result.derivation))
    out.print(Text("Execution order", style="bold"))
    for line in api.plan_steps(doc):
        out.print(plain("  " + line))
    out.print(plain(stats_line(doc["stats"]), style="dim"))


def _written(text: str, fmt: str, out_file: str | None, quiet: bool, for_terminal: Any) -> bool:
    """Write ``text`` to ``out_file`` and/or print a non-rich format; True when done.

    With ``-o`` the file gets ``text`` (JSON for the rich format); the rich view is still
    printed unless ``--quiet``. ``for_terminal()`` gives what standard output shows.
    """
    if out_file:
        write_atomic(out_file, text)
        if not quiet:
            stderr_console().print(f"plan written to {out_file}", highlight=False)
        if fmt != "rich":
            return True
    if quiet:
        return True
    if fmt != "rich":
        sys.stdout.write(for_terminal())
        return True
    return False


def _terminal_export(doc: dict[str, Any], fmt: str) -> str:
    """Return the plan in ``fmt`` for standard output: no character a terminal acts on.

    JSON and YAML stay the same data (their own escapes); the other formats show escapes.
    """
    text = api.export_plan(doc, fmt)
    if fmt == "json":
        return safe_json(text)
    if fmt == "yaml":
        return text if safe(text) == text else yaml.safe_dump(doc, sort_keys=False, width=100)
    return safe(text)


# -- data-bound plans ---------------------------------------------------------------------------

OBJECTIVES = ("cheapest", "choose")  # --objective of data domains

# Plan formats of data domains: the day list alone, as the TravelPlanner benchmark scores it.
DATA_FORMATS = ("travelplanner",)


def emit_data_plan(doc: dict[str, Any], fmt: str, out_file: str | None, quiet: bool) -> None:
    """Write or print a data-bound plan: rich (day by day, with costs), json or travelplanner."""
    if doc.get("kind") != "data":
        raise UsageError(f"--format {fmt} is for data domains (kind: data)")
    if fmt not in ("rich", "json", *DATA_FORMATS):
        raise UsageError(
            f"--format {fmt} does not apply to a data-bound plan (use rich, json or travelplanner)"
        )
    show = api.money(doc.get("currency"))
    body = doc["plan"] if fmt in DATA_FORMATS else doc
    text = json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    if fmt in DATA_FORMATS and not quiet:  # the day list alone is the format: say how the
        # request was read on standard error, so no assumption goes unseen
        stderr_console().print(plain("Request as read: " + request_line(doc)), highlight=False)
    if _written(text, fmt, out_file, quiet, lambda: safe_json(text)):
        return
    out = stdout_console()
    out.print(Text.assemble(("Plan", "bold"), " for: ", plain(str(doc.get("task", "")))))
    read = Table(title="The request as read", show_header=False)
    for name, value in doc.get("request", {}).items():
        if value in (None, []):
            continue
        read.add_row(plain(name), plain(api.shown_value(value)), plain(how_read(doc, name)))
    out.print(read)
    costs: dict[tuple[int, str], float] = {
        (c["day"], c["slot"]): c["cost"] for c in doc.get("costs", [])
    }
    for day in doc["plan"]:
        number = day.get("days")
        table = Table(title=f"Day {number}: {day.get('current_city', '')}", show_header=False)
        for key, value in day.items():
            if key in ("days", "current_city") or value in ("-", None):
                continue
            cost = costs.get((number, key))
            table.add_row(plain(key), plain(str(value)), plain(show(round(cost)) if cost else ""))
        out.print(table)
    bound = doc.get("bound", "budget")  # older documents do not name their bound
    budget = doc.get("request", {}).get(bound) if isinstance(bound, str) else None
    total = doc.get("total_cost", 0.0)
    line = f"Total cost {show(round(total))}"
    if isinstance(budget, (int, float)) and not isinstance(budget, bool):
        line += f" of a {show(budget)} {bound}"
    out.print(Text(line, style="bold"))
    out.print(plain(stats_line(doc["stats"]), style="dim"))


def how_read(doc: dict[str, Any], name: str) -> str:
    """Where a request value came from, when it was not plainly in the text."""
    by = doc.get("read_by", {}).get(name, "text")
    others = ", ".join(map(str, doc.get("read_alternatives", {}).get(name, [])))
    if by == "default":
        return "not stated: default"
    if by == "given":
        return "given"
    if by == "model":
        return f"the model's pick; the text also allows {others}" if others else "the model's pick"
    if by in ("larger", "smaller"):
        return f"the {by} of the values the text gives (also {others})"
    return ""


def request_line(doc: dict[str, Any]) -> str:
    """The request as read, on one line: each value, and how it was read when not plainly."""
    parts = []
    for name, value in doc.get("request", {}).items():
        if value in (None, []):
            continue
        how = how_read(doc, name)
        parts.append(f"{name} {api.shown_value(value)}" + (f" ({how})" if how else ""))
    return "; ".join(parts)


EXAMPLES = examples(
    'fllm plan domains/openagi.yaml "Caption this image." -i image --output text -o plan.json',
    'fllm plan domains/risk_management.yaml "Review the acquisition." --var buyer=Microsoft',
)


def register(app: typer.Typer) -> None:
    """Add the command to the app."""
    app.command("plan", epilog=EXAMPLES)(plan)
