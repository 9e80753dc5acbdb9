"""Run an LTL-specified agent: generate each state's text, enforce transitions, fill env states.

Section 3.3 of the spec paper, with budgets: the model writes a state's text with every tag as a
stop sequence. A tag the automaton allows is followed; a tag it does not allow is dropped; when
no allowed tag ends the text one is forced (chosen by the model when several are allowed).
Budgets only ever remove moves, and only moves from which the final state stays reachable in
the steps left, so every run ends in the final state unless the environment ends it first.

Content languages (``content/``) constrain what a state's text may be: the request carries
the language as a GBNF grammar (the embedded model decodes under it), and every reply is checked;
a reply outside the language is asked again with the parse error shown, at most
``Budget.content_retries`` times, and a reply that still does not parse closes the run by the
shortest valid path, as a spent budget does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.content import Language, LanguageError
from fllm_cli.errors import BudgetExceeded, ContextOverflow, TimeBudgetExceeded, UsageError
from fllm_cli.llm.base import ChoiceRequest, GenerateRequest, Model
from fllm_cli.llm.meter import ModelStats, RunMeter
from fllm_cli.ltl.automaton import Automaton
from fllm_cli.ltl.environment import Environment
from fllm_cli.ltl.languages import ContentRules
from fllm_cli.ltl.spec import AgentSpec, StateDecl
from fllm_cli.ltl.trace import SPLIT_WORDS, TagMatcher, escape_text
from fllm_cli.prompts import render

MAX_STATE_CHARS = 4000


@dataclass(frozen=True)
class Budget:
    """Limits of one run: states, visits of the start state, tokens per state, stop sequences."""

    max_steps: int = 50
    max_loops: int | None = None
    max_tokens: int = 128  # a ReAct thought is a sentence or two; a small model rambles on
    max_stop: int = 0  # 0: send every tag; some providers accept only a few stop sequences
    max_seconds: float | None = None  # wall clock; once spent, the run closes validly
    content_retries: int = 2  # asks again after a reply outside the state's language


@dataclass
class Step:
    """One state of the run: its tag, text, who wrote the text, and whether fllm forced the tag."""

    state: str
    tag: str
    text: str = ""
    source: str = "model"  # model | env | choice | forced (nothing written: the run is closing)
    tag_forced: bool = True
    notes: list[str] = field(default_factory=list)


@dataclass
class RunStats(ModelStats):
    """Counts of a run; the model's usage is charged by the run meter."""

    steps: int = 0
    loops: int = 0
    generate_calls: int = 0
    choice_calls: int = 0
    forced_tags: int = 0
    dropped_tags: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    content_rejects: int = 0  # replies outside their state's language
    content_retries: int = 0  # of which were asked again
    content_failures: int = 0  # states closed because no reply parsed
    content_built: int = 0  # states whose text was built in their language by choices
    budget_hit: str | None = None
    seconds: float = 0.0


_EXAMPLE_BREAK = re.compile(r"(?m)^[ \t]*(?:" + "|".join(re.escape(w) for w in SPLIT_WORDS) + ")")


@dataclass
class AgentRun:
    """The outcome: steps, answer, whether the final state was reached, stats."""

    agent: str
    question: str
    steps: list[Step]
    answer: str | None
    reached_final: bool
    ended_by: str
    stats: RunStats
    header: str = ""
    tags: tuple[str, ...] = ()  # the spec's tags: what a written transcript escapes


BUILD_BUDGET = 24  # characters a built text may run past its shortest completion


class Observer:
    """Hooks for live display and trace files; the default does nothing."""

    def enter(self, step: Step) -> None:
        """Call when a state is entered (its tag is known, its text is not)."""

    def filled(self, step: Step) -> None:
        """Call when a state's text is complete."""

    def event(self, record: dict[str, Any]) -> None:
        """Call with each trace record as it is made (model call, choice, env turn, step)."""


def render_step(step: Step) -> str:
    """Return ``Tag text`` as it appears in a transcript."""
    sep = "" if step.tag.endswith((" ", "\n")) or not step.text else " "
    return f"{step.tag}{sep}{step.text}"


def transcript(steps: list[Step], tags: tuple[str, ...] = ()) -> str:
    """Return the bare transcript in the spec's own tags; with ``tags``, every text is escaped
    (:func:`~fllm_cli.ltl.trace.escape_text`) so ``check-trace`` reads back the same run."""
    if not tags:
        return "\n".join(render_step(s) for s in steps)
    return "\n".join(render_step(Step(s.state, s.tag, escape_text(s.text, tags))) for s in steps)


def extract_answer(spec: AgentSpec, steps: list[Step]) -> str | None:
    """Return the text of the last Answer state, or an 'Answer:' line of the final state."""
    for step in reversed(steps):
        if step.tag.strip().lower() == "answer:":
            return step.text.strip() or None
    if steps and steps[-1].state == spec.final:
        found = re.findall(r"Answer\s*:\s*(.+)", steps[-1].text)
        if found:
            return str(found[-1]).strip() or None
    return None


class AgentRunner:
    """Drive one run of ``spec`` with ``model`` and ``environment``."""

    def __init__(
        self,
        spec: AgentSpec,
        automaton: Automaton,
        model: Model,
        environment: Environment,
        header: str,
        tool_names: tuple[str, ...] = (),
        budget: Budget | None = None,
        observer: Observer | None = None,
        rules: ContentRules | None = None,
    ) -> None:
        self.spec = spec
        self.automaton = automaton
        self.model = model
        # Every call goes through the run meter (the caller's when ``model`` is one); the run's
        # own records (model calls, env turns, steps) are also kept in ``self.records``.
        self.records: list[dict[str, Any]] = []
        self.stats = RunStats()
        self.meter = RunMeter.wrap(model).fork(records=self.records, stats=self.stats)
        self.env = environment
        self.header = header
        self.tool_names = tool_names
        self.budget = budget or Budget()
        self.closing = False
        self.started = time.monotonic()
        self.observer = observer or Observer()
        self.matcher = TagMatcher(spec)
        self.rules = rules or ContentRules(
            {d.name: d.language for d in spec.states if d.language is not None}
        )
        self.steps: list[Step] = []
        if automaton.empty:
            raise UsageError(f"agent '{spec.name}' admits no run")
        need = automaton.distance[automaton.initial]
        if self.budget.max_steps < need:
            raise UsageError(
                f"--max-states {self.budget.max_steps} is too small: a run needs {need}"
            )

    # ------------------------------------------------------------------ the loop

    def run(self, question: str = "") -> AgentRun:
        """Run until the final state (or the environment ends the run) and return the result."""
        start = time.perf_counter()
        self.started = time.monotonic()
        node = self.automaton.initial
        proposed: str | None = None
        ended_by = "final"
        while True:
            allowed = self._allowed(node)
            if node in self.automaton.accepting and (not allowed or self._may_stop(proposed)):
                break
            name, forced, note = self._resolve(proposed, allowed)
            node = self._enter(node, name, forced, note)
            proposed, stop = self._fill(self.steps[-1])
            if stop:
                ended_by = "environment"
                break
        self.stats.seconds = time.perf_counter() - start
        self.stats.steps = len(self.steps)
        reached = node in self.automaton.accepting
        if not reached:
            ended_by = "environment (before the final state)"
        answer = extract_answer(self.spec, self.steps)
        return AgentRun(
            self.spec.name,
            question,
            self.steps,
            answer,
            reached,
            ended_by,
            self.stats,
            self.header,
            self.matcher.tags,
        )

    def _may_stop(self, proposed: str | None) -> bool:
        # In an accepting node the run ends unless the text just written asked for a next state.
        last = self.steps[-1] if self.steps else None
        if last is None:
            return False
        if last.source == "env":
            return False
        return proposed is None

    def _allowed(self, node: int) -> tuple[str, ...]:
        """Return the moves the budgets still permit (never empty unless the automaton ends)."""
        moves = self.automaton.moves(node)
        if not moves:
            return moves
        self._check_clock()
        if self.closing:  # the context window is full: finish by the shortest way
            if node in self.automaton.accepting:
                return ()
            return (self.automaton.shortest_completion(node)[0],)
        left = self.budget.max_steps - len(self.steps)
        fits = tuple(m for m in moves if self._after(node, m) + 1 <= left)
        if not fits:  # out of steps: stop if we may, else take the shortest completion
            if node in self.automaton.accepting:
                self.stats.budget_hit = (
                    self.stats.budget_hit or f"max-states {self.budget.max_steps}"
                )
                return ()
            fits = (self.automaton.shortest_completion(node)[0],)
        if len(fits) < len(moves) and not self.stats.budget_hit:
            self.stats.budget_hit = f"max-states {self.budget.max_steps}"
        limit = self.budget.max_loops
        if limit is not None and self.stats.loops >= limit:
            no_loop = tuple(m for m in fits if m != self.spec.start)
            if not no_loop and node in self.automaton.accepting:
                self.stats.budget_hit = self.stats.budget_hit or f"max-loops {limit}"
                return ()
            if no_loop and len(no_loop) < len(fits):
                self.stats.budget_hit = self.stats.budget_hit or f"max-loops {limit}"
                fits = no_loop
        return fits

    def _check_clock(self) -> None:
        """Once the wall-clock budget is spent, close the run like a full context window."""
        limit = self.budget.max_seconds
        if self.closing or limit is None:
            return
        if time.monotonic() - self.started >= limit:
            self.closing = True
            self.stats.budget_hit = self.stats.budget_hit or f"max-seconds {limit:g}"

    def _after(self, node: int, name: str) -> int:
        target = self.automaton.step(node, name)
        assert target is not None
        return self.automaton.distance[target]

    def _resolve(self, proposed: str | None, allowed: tuple[str, ...]) -> tuple[str, bool, str]:
        """Pick the next state: the model's own tag if allowed, else a forced one."""
        note = ""
        if proposed is not None:
            if proposed in allowed:
                return proposed, False, ""
            note = f"dropped '{self._tag(proposed)}' (not allowed here)"
            self.stats.dropped_tags += 1
        self.stats.forced_tags += 1
        if len(allowed) == 1:
            return allowed[0], True, note
        options = tuple(self._tag(n) for n in allowed)
        index = self._choose(options, "agent-transition", "choose_state.j2")
        return allowed[index], True, note

    def _tag(self, name: str) -> str:
        return self.spec.state(name).text.strip()

    def _enter(self, node: int, name: str, forced: bool, note: str) -> int:
        target = self.automaton.step(node, name)
        assert target is not None
        if name == self.spec.start:
            self.stats.loops += 1
        step = Step(name, self.spec.state(name).text, tag_forced=forced)
        if note:
            step.notes.append(note)
        self.steps.append(step)
        self.observer.enter(step)
        return target

    # ------------------------------------------------------------------ filling a state

    def _fill(self, step: Step) -> tuple[str | None, bool]:
        """Write the state's text; return (state proposed by the text, environment asked to end)."""
        decl = self.spec.state(step.state)
        proposed: str | None = None
        stop = False
        if decl.env_input:
            stop = self._fill_env(step, decl)
        elif decl.choices:
            self._fill_choice(step, decl)
        else:
            proposed = self._fill_model(step)
        self.observer.filled(step)
        self.observer.event(
            self.meter.event(
                "step",
                state=step.state,
                tag=step.tag,
                text=step.text,
                source=step.source,
                tag_forced=step.tag_forced,
                notes=step.notes,
            )
        )
        return proposed, stop

    def _fill_env(self, step: Step, decl: StateDecl) -> bool:
        step.source = "env"
        result = self.env.fill(decl, self.steps[:-1])
        step.text = result.text
        if "tool" in result.detail:
            self.stats.tool_calls += 1
        if not result.ok:
            self.stats.tool_errors += 1
        detail = {k: v for k, v in result.detail.items() if k not in ("type", "event")}
        self.observer.event(
            self.meter.event(
                "env", state=step.state, text=result.text, ok=result.ok, end=result.end, **detail
            )
        )
        return result.end

    def _fill_choice(self, step: Step, decl: StateDecl) -> None:
        step.source = "choice"
        options = self.tool_names if decl.tool_choices else decl.choices or ()
        if not options:
            raise UsageError(
                f"state '{decl.name}' must name a tool, but no tools are available",
                hint="pass --tools",
            )
        index = self._choose(tuple(options), "agent-content", "choose_content.j2")
        step.text = options[index]

    def _fill_model(self, step: Step) -> str | None:
        before = [(s.state, s.text) for s in self.steps[:-1]]
        language = self.rules.language_for(self.spec, step.state, before)
        problem: str | None = None
        attempt = 0
        while True:
            proposed = self._generate(step, language, problem)
            if language is None or step.source == "forced":
                return proposed
            problem = language.check(step.text) if step.text else "the text is empty"
            if problem is None:
                return proposed
            self.stats.content_rejects += 1
            record = self.meter.last
            if record is not None and record.get("type") == "generate":
                record["content_error"] = problem
            if attempt >= self.budget.content_retries:
                break
            attempt += 1
            self.stats.content_retries += 1
        if self._build(step, language, attempt + 1, problem):
            return None
        # Nothing written parses: close the run by the shortest valid path.
        self.stats.content_failures += 1
        self.closing = True
        self.stats.budget_hit = self.stats.budget_hit or f"content language of {step.state}"
        step.notes.append(
            f"{attempt + 1} replies outside {language.label}; closing the run (last: {problem})"
        )
        step.source = "forced"
        step.text = ""
        return None

    def _build(self, step: Step, language: Language, replies: int, problem: str | None) -> bool:
        """No reply parses: build the text inside the language, the model choosing at each
        open point (a character, an alternative, one more repetition) and the shortest
        completion taken as the length budget runs out. Every chooser finishes this way, the
        random one included. Returns False when the language has no text to build."""

        def pick(so_far: str, options: tuple[str, ...]) -> int:
            step.text = so_far  # the context shows what is built so far
            return self._choose(options, "agent-build", "choose_content.j2")

        try:
            text = language.build(pick, BUILD_BUDGET)
        except LanguageError:
            return False
        if language.check(text) is not None:  # never present a text outside its language
            return False
        step.text = text
        step.source = "built"
        step.notes.append(
            f"{replies} replies outside {language.label} (last: {problem}); built the text in"
            " the language by choices"
        )
        self.stats.content_built += 1
        return True

    def _generate(self, step: Step, language: Language | None, problem: str | None) -> str | None:
        """Ask the model for the state's text (again, with the error, when ``problem``)."""
        self._check_clock()
        if self.closing:
            step.source = "forced"
            step.text = ""
            return None
        prompt = self._context(with_open_tag=True)
        if problem is not None and language is not None:
            prompt = self._correction(step, language, problem)
        bound = self.spec.state(step.state).max_tokens
        stops, hinted = self._stops(), language
        if language is not None and language.line_only:  # the line's end enforces it
            stops, hinted = ("\n", *stops), None
        request = GenerateRequest(
            prompt=prompt,
            stop=stops,
            max_tokens=min(self.budget.max_tokens, bound or self.budget.max_tokens),
            kind="agent-state" if problem is None else "agent-state-retry",
            grammar=hinted.gbnf() if hinted is not None else None,
            schema=hinted.json_schema() if hinted is not None else None,
        )
        try:
            generation = self.meter.generate(request, state=step.state)
        except ContextOverflow:
            # Like a spent budget: the transcript cannot grow, so close it validly.
            self.closing = True
            self.stats.budget_hit = self.stats.budget_hit or "context window"
            step.source = "forced"
            step.text = ""
            step.notes.append("the model's context window is full; closing the run")
            return None
        except BudgetExceeded as exc:
            self._spent(exc)
            step.source = "forced"
            step.text = ""
            step.notes.append("the cost budget is spent; closing the run")
            return None
        self.stats.generate_calls += 1
        text, proposed, notes = self._cut(generation.text)
        step.source = "model"
        step.text = text
        step.notes.extend(notes)
        record = self.meter.last
        if record is not None:
            record["proposed"] = proposed
            self.observer.event(record)
        return proposed

    def _correction(self, step: Step, language: Language, problem: str) -> str:
        """The context again, with the rejected text and why, before the open tag.

        The rejected text is shown as a quoted, shortened Python literal: model text is data
        in the prompt, never a template.
        """
        shown = step.text if len(step.text) <= 120 else step.text[:117] + "..."
        note = (
            f"(Note: the text after '{step.tag.strip()}' must be {language.describe()}. "
            f"The previous reply {shown!r} was rejected: {problem}. Write only that.)"
        )
        body = transcript(self.steps[:-1])
        parts = [self.header.rstrip("\n")]
        if body:
            parts.append(body)
        parts += [note, step.tag]
        return "\n".join(parts)

    def _cut(self, raw: str) -> tuple[str, str | None, list[str]]:
        """Split model output at its first tag; return (text, proposed state, notes)."""
        notes: list[str] = []
        proposed: str | None
        found = self.matcher.first(raw)
        brk = _EXAMPLE_BREAK.search(raw)  # "\n\nQuestion: ..." starts another example
        if brk is not None and (found is None or brk.start() < found[0]):
            notes.append(f"ignored {len(raw[brk.start() :].strip())} characters from a new example")
            raw, found = raw[: brk.start()], None
        if found is not None:
            begin, end, state = found
            if raw[end:].strip():
                notes.append(
                    f"ignored {len(raw[end:].strip())} characters after '{raw[begin:end]}'"
                )
            text, proposed = raw[:begin], state
        else:
            text, recovered = self._recover_prefix(raw)
            proposed = recovered
        text = text.strip()
        if len(text) > MAX_STATE_CHARS:
            notes.append(f"cut to {MAX_STATE_CHARS} characters")
            text = text[:MAX_STATE_CHARS]
        return text, proposed, notes

    def _recover_prefix(self, raw: str) -> tuple[str, str | None]:
        """Undo a cut inside a longer tag: stopping at 'Thought:' leaves '...\\nFinal '."""
        tags = {s.text.strip(): s.name for s in self.spec.states}
        for long_tag, name in sorted(tags.items(), key=lambda kv: -len(kv[0])):
            for short in tags:
                if short != long_tag and long_tag.endswith(short):
                    head = long_tag[: -len(short)].strip()
                    match = re.search(r"(?:^|\n)[ \t]*" + re.escape(head) + r"[ \t]*$", raw)
                    if head and match:
                        return raw[: match.start()], name
        return raw, None

    def _stops(self) -> tuple[str, ...]:
        env_first = sorted(self.spec.states, key=lambda s: (not s.env_input, -len(s.text.strip())))
        stops = tuple(s.text.strip() for s in env_first)
        return stops[: self.budget.max_stop] if self.budget.max_stop > 0 else stops

    # ------------------------------------------------------------------ prompts

    def _context(self, with_open_tag: bool) -> str:
        body = transcript(self.steps[:-1]) if with_open_tag else transcript(self.steps)
        parts = [self.header.rstrip("\n")]
        if body:
            parts.append(body)
        if with_open_tag:
            parts.append(self.steps[-1].tag)
        return "\n".join(parts)

    def _choose(self, options: tuple[str, ...], kind: str, template: str) -> int:
        self._check_clock()
        if self.closing:  # no model call once the run is closing: the first option will do
            return 0
        current = self.steps[-1] if self.steps else None
        prompt = render(
            f"agent/{template}",
            {
                "context": self._context(with_open_tag=False),
                "options": options,
                "state": current.tag.strip() if current else "",
            },
        )
        try:
            result = self.meter.choose(ChoiceRequest(prompt=prompt, options=options, kind=kind))
        except BudgetExceeded as exc:
            self._spent(exc)
            return 0
        self.stats.choice_calls += 1
        index = result.index if 0 <= result.index < len(options) else 0
        if self.meter.last is not None:
            self.observer.event(self.meter.last)
        return index

    def _spent(self, exc: BudgetExceeded) -> None:
        """A budget of the run meter is spent: close the run like a full context window."""
        self.closing = True
        what = "max-seconds" if isinstance(exc, TimeBudgetExceeded) else "max-cost"
        self.stats.budget_hit = self.stats.budget_hit or what


def header_prompt(
    spec: AgentSpec,
    question: str,
    tools: dict[str, Any],
    examples: str = "",
    render_fn: Callable[..., str] = render,
) -> str:
    """Render the instructions that precede the transcript (the spec's template or a default)."""
    from pathlib import Path

    from fllm_cli.resources import data_dir

    name = spec.prompt
    search = [str(Path(spec.path).parent)]
    if name is None:
        candidate = f"agent/{spec.name}.j2"
        name = candidate if (data_dir("prompts") / candidate).exists() else "agent/default.j2"
    variables = {
        "agent": spec.name,
        "question": question,
        "tools": [
            {"name": k, "description": getattr(t, "description", "")} for k, t in tools.items()
        ],
        "tool_names": list(tools),
        "states": [
            {
                "name": s.name,
                "tag": s.text.strip(),
                "env_input": s.env_input,
                "choices": list(tools) if s.tool_choices else list(s.choices or ()),
                "language": s.language.describe() if s.language is not None else None,
            }
            for s in spec.states
        ],
        "examples": examples.strip(),
    }
    return render_fn(name, variables, search)
