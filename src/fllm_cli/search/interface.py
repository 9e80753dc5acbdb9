"""Ask the model what a task provides and produces, when ``--input/--output`` are omitted.

The options come from the domain's task interface, and only combinations for which a valid plan
exists are offered, so the answer can always be planned for.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from itertools import combinations_with_replacement
from typing import Any

from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import PDA, Config, pda_from_grammar
from fllm_cli.domain.model import Domain, Task, Tool
from fllm_cli.domain.templates import DEFAULT_TEMPLATES
from fllm_cli.errors import NoPlanError
from fllm_cli.grammar.compile import parse_inputs, tool_grammar
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, Model
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render
from fllm_cli.search.beam import BeamSearch
from fllm_cli.search.proposal import Proposal
from fllm_cli.search.relevance import Relevance, unit_place
from fllm_cli.search.roles import Reading
from fllm_cli.search.strategy import STRATEGIES, Strategy

NUMBER_WORDS = {2: "two", 3: "three", 4: "four"}
INTERFACE_WIDTH = 8  # beam width when comparing interfaces (only the best score is needed)
INTERFACE_NODES = 2_000  # look-ahead nodes per query while comparing interfaces


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _phrase(domain: Domain, modality: str) -> str:
    m = domain.modality(modality)
    return m.phrase if m else modality


def describe_inputs(modalities: tuple[str, ...], domain: Domain) -> str:
    """Return 'an image and a text', 'two texts'."""
    parts = []
    for modality, count in Counter(modalities).items():
        m = domain.modality(modality)
        phrase = m.phrase if m else modality
        parts.append(
            f"{_article(phrase)} {phrase}"
            if count == 1
            else f"{NUMBER_WORDS.get(count, count)} {phrase}s"
        )
    return " and ".join(parts)


# (input modalities, output) -> the task's automaton and its look-ahead; the task text plays no
# part in either, so the check of which interfaces are feasible and their ranking share them.
Compiled = dict[tuple[tuple[str, ...], str, bool], tuple[PDA, GrammarLookahead]]


def _compile(
    domain: Domain,
    combo: tuple[str, ...],
    output: str,
    compiled: Compiled | None,
    lenient: bool = False,
) -> tuple[PDA, GrammarLookahead]:
    """The task automaton of an interface; ``lenient`` drops the every-input rule (a cheaper
    automaton whose plans include every plan of the strict one)."""
    key = (combo, output, lenient)
    if compiled is not None and key in compiled:
        return compiled[key]
    if lenient:
        domain = replace(domain, limits=replace(domain.limits, use_every_input=False))
    pda = pda_from_grammar(tool_grammar(domain, Task("", parse_inputs(list(combo)), output)))
    # A small node budget: an unproven dead end only costs the beam a slot (it keeps accepting
    # configurations alone), while proofs of dead ends can grow with the tools' limits.
    pair = (pda, GrammarLookahead(pda, node_budget=INTERFACE_NODES))
    if compiled is not None:
        compiled[key] = pair
    return pair


def _exists(lookahead: GrammarLookahead) -> bool:
    """Whether the task has a plan; a search that ran out of nodes proved nothing, so the
    interface stays offered (planning it then searches with the full budget)."""
    return lookahead.word_exists() or lookahead.exhausted_last


Interfaces = list[tuple[tuple[str, ...], list[str]]]  # (input modalities, outputs) pairs


def _domain_key(domain: Domain) -> str:
    """What an interface's automaton depends on: the domain's types, tools, task and limits, with
    the places in its file they were read from (not its prompts or name)."""
    return repr((domain.modalities, domain.tools, domain.task, domain.limits))


def _per_domain(
    store: dict[str, Interfaces], domain: Domain, work: Callable[[], Interfaces]
) -> Interfaces:
    """``work()``'s interfaces, kept in ``store`` per domain: which interfaces have plans depends
    on the domain alone, so a process planning many requests (the bench, a library user) works it
    out once per domain."""
    key = _domain_key(domain)
    known = store.get(key)
    if known is None:
        known = work()
        if len(store) >= 64:
            store.clear()
        store[key] = known
    return [(combo, list(outs)) for combo, outs in known]


def feasible_interfaces(domain: Domain, compiled: Compiled | None = None) -> Interfaces:
    """Return (input modalities, feasible outputs) for every allowed input combination.

    ``compiled``, when given, keeps each automaton built on the way for :func:`rank_interfaces`.
    """
    iface = domain.task
    names = tuple(m.name for m in domain.modalities)
    ins = iface.inputs if iface and iface.inputs else names
    outs = iface.outputs if iface and iface.outputs else names
    most = iface.max_inputs if iface and iface.max_inputs else 2

    def work() -> Interfaces:
        found = []
        for size in range(1, most + 1):
            for combo in combinations_with_replacement(ins, size):
                ok = [o for o in outs if _exists(_compile(domain, combo, o, compiled)[1])]
                if ok:
                    found.append((combo, ok))
        return found

    return _per_domain(_FEASIBLE, domain, work)


_FEASIBLE: dict[str, Interfaces] = {}
_BUILT = threading.local()  # per thread: a look-ahead keeps search state while it is queried
BUILT_DOMAINS = 2  # domains whose automata a thread keeps (about 30-60 MB each, mostly memo)


def compiled_for(domain: Domain) -> Compiled:
    """The interface automata this thread has built for ``domain``, kept across requests.

    Building them is most of what reading an interface costs in a 14-tool domain, and they
    depend on the domain alone, so a process that plans many requests (a library loop, the
    bench) builds them once. Each thread keeps its own, since a look-ahead is not safe to query
    from two threads at once.
    """
    store: dict[str, Compiled] | None = getattr(_BUILT, "store", None)
    if store is None:
        store = _BUILT.store = {}
    key = _domain_key(domain)
    built = store.get(key)
    if built is None:
        while len(store) >= BUILT_DOMAINS:
            store.pop(next(iter(store)))  # the domain planned least recently
        built = store[key] = {}
    else:
        store[key] = store.pop(key)  # now the most recent
    return built


def settled_interfaces(domain: Domain, compiled: Compiled | None = None) -> Interfaces:
    """Return the feasible interfaces without those that have no plan after all.

    :func:`feasible_interfaces` keeps an interface its small look-ahead budget could not decide
    (two texts for a domain with one text tool, say). Before a model is asked to choose among
    them, those are decided with the full budget (a fraction of a second, once per domain per
    process), so the model is never offered a reading that then fails to plan. An interface still
    undecided stays offered."""

    def decided(combo: tuple[str, ...], output: str) -> bool:
        pda, lookahead = _compile(domain, combo, output, compiled)
        if lookahead.word_exists():
            return True
        full = GrammarLookahead(pda)  # the full node budget
        return full.word_exists() or full.exhausted_last

    def work() -> Interfaces:
        kept = [
            (combo, [o for o in outs if decided(combo, o)])
            for combo, outs in feasible_interfaces(domain, compiled)
        ]
        return [(combo, outs) for combo, outs in kept if outs]

    return _per_domain(_SETTLED, domain, work)


_SETTLED: dict[str, Interfaces] = {}


def _texts(domain: Domain) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """The tools' descriptions and the types' (phrase, description), as strategies read them."""
    described = {t.name: t.description for t in domain.tools}
    return described, {m.name: (m.phrase, m.description) for m in domain.modalities}


def tool_evidence(domain: Domain, text: str, strategy: Strategy) -> Relevance | None:
    """Score the domain's tools (names and descriptions) by the request with ``strategy``'s
    signals; the modalities' words are type words, not evidence for a tool."""
    return strategy.evidence(*_texts(domain), text)


TYPE_FIT = 0.1  # per type the request names that the interface has, or lacks
LAST_ASKED = 0.5  # the output of the tool the request's last pointing part asks for
FIRST_ASKED = 0.3  # inputs that can feed the tool the request's first pointing part asks for
ROLE_FIT = 1.0  # per type named out of its only role (see role_fit)
ROLE_READING = 1.0  # per unit of the learned reading's log-probability (search/roles.py)


def _named(combo: tuple[str, ...], output: str, named: list[str]) -> float:
    """How well the types the request names fit an interface (below one tool's evidence).

    Each type named and found among the interface's inputs or output adds ``TYPE_FIT``; each
    type named that the interface lacks, and each input type never named, takes it away (an
    output may go unnamed: "tell me what's in it"). Which named type is the output is left to
    the learned role reader (a bonus for the last type named no longer helped once it read
    requests; docs/benchmarks.md, stop 51).
    """
    said, used = set(named), {*combo, output}
    fit = TYPE_FIT * (len(said & used) - len(said - used) - len(set(combo) - said))
    return fit - 0.01 * len(combo)


Roles = tuple[frozenset[str], frozenset[str]]  # what type_roles returns


def type_roles(domain: Domain) -> Roles:
    """Return (the types only a task can give, the types only a task can want back): no tool
    makes the first (a scanned page comes from a scanner), no tool reads the second (a chart is
    only looked at). Their roles are fixed by the domain, so naming one says where it goes."""
    names = {m.name for m in domain.modalities}
    made = {t.output for t in domain.tools}
    read = {m for t in domain.tools for m in t.inputs}
    return frozenset(names - made), frozenset(names - read)


def role_fit(combo: tuple[str, ...], output: str, named: list[str], roles: Roles) -> float:
    """``-ROLE_FIT`` for each type named whose only role the interface does not give it: a type
    no tool makes that is not among the inputs, a type no tool reads that is not the output.
    Worth a step: the plan cannot hold such a type anywhere else."""
    given_only, wanted_only = roles
    said = set(named)
    misplaced = ((said & given_only) - set(combo)) | ((said & wanted_only) - {output})
    return -ROLE_FIT * len(misplaced)


MADE_FIRST = 1.0  # per input type the request names only once a part has asked to make it


def made_first(
    domain: Domain, text: str, relevance: Relevance, places: list[tuple[int, str]]
) -> frozenset[str]:
    """The types the request names only at or after the start of a part of it that asks for a
    tool making that type from other types: "transcribe it and write the notes from the
    transcript" names the transcript the plan makes, not one it brings. ``places`` is where the
    request names each type (semantic.type_places)."""
    asks: dict[str, int] = {}
    cursor = 0  # units come in the request's order: each is looked for from the last one on
    for _, (_, tool, unit) in sorted(unit_tools(domain, relevance).items()):
        at = find_part(text, unit, cursor)
        if at < 0:
            continue
        cursor = at
        if tool.output not in tool.inputs:
            asks[tool.output] = min(asks.get(tool.output, at), at)
    first: dict[str, int] = {}
    for at, t in places:
        first.setdefault(t, at)
    return frozenset(t for t, at in first.items() if t in asks and at >= asks[t])


def find_part(text: str, part: str, start: int = 0) -> int:
    """Where ``part`` (a unit of the request, its whitespace collapsed by semantic.parts)
    starts in ``text`` at or after ``start``, across any run of spaces or line breaks; -1 when
    it is not there."""
    words = part.split()
    if not words:
        return -1
    found = re.compile(r"\s+".join(map(re.escape, words))).search(text, start)
    return found.start() if found else -1


def unit_tools(domain: Domain, relevance: Relevance) -> dict[int, tuple[float, Tool, str]]:
    """Each unit of the request that carries its place, with the tool it points at most
    strongly: place -> (evidence, tool, unit text). Bare shared words and a model's vote have
    no place and say nothing about order."""
    strongest: dict[int, tuple[float, Tool, str]] = {}
    for symbol, units in relevance.matched.items():
        tool = domain.tool(symbol)
        if tool is None:
            continue
        for key, value in units.items():
            place = unit_place(key)
            if place is not None and (place[0] not in strongest or value > strongest[place[0]][0]):
                strongest[place[0]] = (value, tool, place[1])
    return strongest


def _pointed(domain: Domain, relevance: Relevance, last: bool) -> tuple[str, Tool] | None:
    """Return (unit text, tool) for the last (or first) unit of the request that points at a
    tool of ``domain``, taking that unit's strongest tool; None when no unit carries its place."""
    units = unit_tools(domain, relevance)
    if not units:
        return None
    _, tool, text = units[max(units) if last else min(units)]
    return text, tool


def last_asked(domain: Domain, relevance: Relevance) -> tuple[str, str, str] | None:
    """Return (part, tool, its output type) for the last part of the request that points at a
    tool, or None.

    People tend to say what they want back last ("fix the scan, then send me the totals"), so
    the output type of what the last pointing part asks for is a good guess at the task's output,
    even when the part is too weak to settle which tool it is.
    """
    found = _pointed(domain, relevance, last=True)
    return None if found is None else (found[0], found[1].name, found[1].output)


def first_asked(domain: Domain, relevance: Relevance) -> tuple[str, str, tuple[str, ...]] | None:
    """Return (part, tool, its input types) for the first part of the request that points at a
    tool, or None.

    The first thing a request asks for is usually done to what it brings ("merge these two
    files, then ..."), so an interface that can feed that tool from its own inputs is a good
    guess, even when the part is too weak to bring the tool into the plan.
    """
    found = _pointed(domain, relevance, last=False)
    return None if found is None else (found[0], found[1].name, found[1].inputs)


First = tuple[str, str, tuple[str, ...]]  # what first_asked returns
Last = tuple[str, str, str]  # what last_asked returns


def part_order(domain: Domain, relevance: Relevance) -> tuple[First | None, Last | None]:
    """What the first and the last pointing parts of the request ask for (see above)."""
    return first_asked(domain, relevance), last_asked(domain, relevance)


def order_fit(
    combo: tuple[str, ...],
    output: str,
    first: First | None,
    last: Last | None,
) -> float:
    """What the order of the request's parts says for an interface: ``LAST_ASKED`` when its
    output is what the last pointing part asks for, ``FIRST_ASKED`` when its inputs can feed
    what the first pointing part asks for (as a multiset: two tables for a tool of two)."""
    fit = LAST_ASKED if last is not None and output == last[2] else 0.0
    if first is not None and not Counter(first[2]) - Counter(combo):
        fit += FIRST_ASKED
    return fit


def usable_tools(domain: Domain, inputs: tuple[str, ...], output: str) -> frozenset[str]:
    """The tools that can occur in some plan from ``inputs`` to ``output``, by the types alone
    (use limits ignored): their inputs can be made from the task's, and their output leads on
    to the task's output. A cheap superset, for bounding what an interface's plans can score."""
    made = set(inputs)
    changed = True
    while changed:
        changed = False
        for tool in domain.tools:
            if tool.output not in made and all(m in made for m in tool.inputs):
                made.add(tool.output)
                changed = True
    makeable = [t for t in domain.tools if all(m in made for m in t.inputs)]
    wanted = {output}
    changed = True
    while changed:
        changed = False
        for tool in makeable:
            if tool.output in wanted and not set(tool.inputs) <= wanted:
                wanted.update(tool.inputs)
                changed = True
    return frozenset(t.name for t in makeable if t.output in wanted)


SELF_PAIR = 1.5  # cost of a tool that takes the same task input in two slots of one type
ROUND_TRIP = 1.0  # cost of a tool that turns data back into a type the plan had left
# Cost of a task input fed directly to two slots, one of them not its tool's first (see
# aux_reuses): a tie-break, far below a step's cost, between one input read twice and two inputs.
AUX_REUSE = 0.05


Node = tuple[str, tuple["Node", ...]]  # a plan symbol and the subplans of its inputs


Slots = Mapping[str, tuple[str, ...]]  # each tool's input types, in order


def _slots(domain: Domain) -> dict[str, tuple[str, ...]]:
    return {t.name: t.inputs for t in domain.tools}


def _outputs(domain: Domain) -> dict[str, str]:
    return {t.name: t.output for t in domain.tools}


def plan_tree(domain: Domain, word: list[str], slots: Slots | None = None) -> Node | None:
    """Parse a tool plan in prefix order into its tree; None when it is not one of
    ``domain``'s tool plans (a symbol short of its inputs, or words left over). The planner's
    own tree (plan/model.py) is a derivation above this layer; the beam's judge needs only this."""
    slots = _slots(domain) if slots is None else slots

    def parse(i: int) -> tuple[Node, int]:
        symbol = word[i]
        children: list[Node] = []
        nxt = i + 1
        for _ in slots.get(symbol, ()):
            child, nxt = parse(nxt)
            children.append(child)
        return (symbol, tuple(children)), nxt

    try:
        tree, end = parse(0)
    except (IndexError, RecursionError):
        return None
    return tree if end == len(word) else None


def _self_pairs(tree: Node, slots: Slots) -> int:
    count = 0

    def leaves(node: Node) -> frozenset[str]:
        nonlocal count
        symbol, children = node
        if symbol not in slots:
            return frozenset({symbol})
        seen_by_type: dict[str, set[str]] = {}
        mine: set[str] = set()
        clash = False
        for modality, child in zip(slots[symbol], children):
            below = leaves(child)
            earlier = seen_by_type.setdefault(modality, set())
            clash = clash or bool(earlier & below)
            earlier |= below
            mine |= below
        count += clash
        return frozenset(mine)

    leaves(tree)
    return count


def _aux_reuses(tree: Node, slots: Slots) -> int:
    feeds: dict[str, list[int]] = {}  # task input -> the slot index of every direct use

    def walk(node: Node) -> None:
        for index, child in enumerate(node[1]):
            if child[0] not in slots:
                feeds.setdefault(child[0], []).append(index)
            else:
                walk(child)

    walk(tree)
    return sum(1 for uses in feeds.values() if len(uses) > 1 and max(uses) > 0)


def aux_reuses(domain: Domain, word: list[str]) -> int:
    """Count the task inputs of a plan (prefix order) that feed two slots directly, one of them
    a later slot of its tool. A tool's first input is what it works on; its later ones are
    what it works with (a question, a reference, a template). A request that paints a picture
    from its prompt and then asks a question about the picture brings two texts, not one text
    read as both; with this count an interface that reads one input twice costs a little more
    than the one with both, all else equal. The same input as the material of two steps (a
    ticket both looked up and answered) is not counted."""
    slots = _slots(domain)
    tree = plan_tree(domain, word, slots)
    return 0 if tree is None else _aux_reuses(tree, slots)


def self_pairs(domain: Domain, word: list[str]) -> int:
    """Count the tools of a plan (prefix order) that get the same task input in two slots of
    the same type: diffing, merging or joining a thing with itself. A request that wants such a
    tool almost always brings two things; the interface with two inputs should win."""
    slots = _slots(domain)
    tree = plan_tree(domain, word, slots)
    return 0 if tree is None else _self_pairs(tree, slots)


def _round_trips(tree: Node, output: Mapping[str, str]) -> int:
    count = 0

    def walk(node: Node, above: tuple[str, ...]) -> None:
        nonlocal count
        symbol, children = node
        made = output.get(symbol)
        if made is None:  # a task input: coming back to its type is no detour
            return
        if not above:
            above = (made,)
        elif made != above[-1]:
            count += made in above
            above = (*above, made)
        for child in children:
            walk(child, above)

    walk(tree, ())
    return count


def round_trips(domain: Domain, word: list[str]) -> int:
    """Count the tools of a plan (prefix order) whose output type the plan had already made
    further up and then left for another type: summary text turned into code and explained
    back into text. Such a detour collects evidence from weak parts of a request ("regexes"
    read as a log) far more often than a request asks for it. The task's inputs are not
    counted: turning log lines into a table and describing the table in text is a plan, not a
    detour."""
    tree = plan_tree(domain, word)
    return 0 if tree is None else _round_trips(tree, _outputs(domain))


def plan_shape_cost(domain: Domain) -> Callable[[list[str]], float]:
    """The beam's judge for tool plans: ``SELF_PAIR`` per tool fed the same input twice,
    ``ROUND_TRIP`` per tool that makes a type its plan had already left, ``AUX_REUSE`` per task
    input that one step works on and another works with (:func:`aux_reuses`). The beam keeps one
    order of the same tools (search/beam.py), so of two orders of one tool set that differ only
    in a round trip, the judge may see only the worse."""
    slots, output = _slots(domain), _outputs(domain)

    def judge(word: list[str]) -> float:
        tree = plan_tree(domain, word, slots)
        if tree is None:
            return 0.0
        return (
            SELF_PAIR * _self_pairs(tree, slots)
            + ROUND_TRIP * _round_trips(tree, output)
            + AUX_REUSE * _aux_reuses(tree, slots)
        )

    return judge


MODEL_READING = 2.0  # the interface a capable model proposed is preferred by this much
CLOSE = 0.25  # a runner-up reading this near the chosen one is reported as a close second


def rank_interfaces(
    domain: Domain,
    text: str,
    options: list[tuple[tuple[str, ...], list[str]]],
    relevance: Relevance,
    compiled: Compiled | None = None,
    proposal: Proposal | None = None,
    named: list[str] | None = None,
    asked: tuple[First | None, Last | None] | None = None,
    roles: Roles | None = None,
    slack: float = 0.0,
    reading: Reading | None = None,
    late: frozenset[str] = frozenset(),
) -> list[tuple[float, tuple[str, ...], str]]:
    """Score feasible (inputs, output) pairs by their best plan's evidence and the types named.

    ``relevance`` is the request's scores of the tools; ``asked`` what its first and last
    pointing parts ask for (:func:`part_order`) and ``roles`` the domain's fixed-role types
    (:func:`type_roles`), each worked out here when not given. Pairs are
    searched most promising first, and a pair that cannot reach the best score found so far
    (its types' fit plus all the evidence the text holds) is left out: the first entry and every
    entry tied with it are exact, which is what choosing an interface needs. With ``slack``,
    a second pass then makes the best entry after them exact too when it is within ``slack`` of
    the first (entries below it may not be): it searches the pairs left that could come that
    close, and once a runner-up is found, only those that could beat it. The first pass is the
    same with or without it, so the slack never changes the first entries.
    """
    tools = frozenset(t.name for t in domain.tools)
    if named is None:  # the types named by their own words, as the words strategy reads them
        named = STRATEGIES["words"].read_types(*_texts(domain), text)
    pairs = [(combo, output) for combo, outs in options for output in outs]
    roles = type_roles(domain) if roles is None else roles
    first, last = part_order(domain, relevance) if asked is None else asked
    fits = [
        _named(combo, output, named)
        + role_fit(combo, output, named, roles)
        + order_fit(combo, output, first, last)
        + (0.0 if reading is None else ROLE_READING * reading.log_fit(combo, output))
        - MADE_FIRST * len(late & set(combo))
        for combo, output in pairs
    ]
    if proposal is not None and proposal.inputs is not None and proposal.output is not None:
        wanted = (sorted(proposal.inputs), proposal.output)
        fits = [
            fit + (MODEL_READING if (sorted(combo), output) == wanted else 0.0)
            for fit, (combo, output) in zip(fits, pairs)
        ]
    bounds = [
        round(fit + relevance.ceiling(usable_tools(domain, combo, output)), 9)
        for (combo, output), fit in zip(pairs, fits)
    ]
    order = sorted(range(len(pairs)), key=lambda i: (-bounds[i], -fits[i]))
    judge = plan_shape_cost(domain)
    strict = domain.limits.use_every_input

    def reach(i: int, bar: float) -> float | None:
        """Pair i's best total when it reaches ``bar``, else None."""
        (combo, output), fit = pairs[i], fits[i]
        if bounds[i] < bar - 1e-9:
            return None

        def best(lenient: bool) -> list[tuple[float, Config, tuple[str, ...]]]:
            pda, lookahead = _compile(domain, combo, output, compiled, lenient)
            return BeamSearch(
                pda, lookahead, relevance, tools, width=INTERFACE_WIDTH,
                judge=None if lenient else judge,  # the lenient pass is a bound: no costs
                floor=bar - fit - 1e-9,
            ).candidates()  # fmt: skip

        if strict and len(combo) > 1:
            # The lenient automaton's plans include the strict one's, and its look-ahead is
            # cheap: when even its best plan cannot reach the bar, the strict search is skipped.
            loose = best(lenient=True)
            if not loose or loose[0][0] + fit < bar - 1e-9:
                return None
        plans = best(lenient=False)
        return plans[0][0] + fit if plans else None

    found: dict[int, float] = {}
    top = float("-inf")
    for i in order:
        total = reach(i, top)
        if total is not None:
            found[i] = total
            top = max(top, total)
    if slack:  # the runner-up within the slack, searched for once the top is known
        second = max((t for t in found.values() if t < top - 1e-9), default=float("-inf"))
        for i in order:
            if i in found:
                continue  # scored already (its best plan reached the bar of its time)
            total = reach(i, max(top - slack, second))
            if total is not None:
                found[i] = total
                second = max(second, total)
    ranked = sorted(found.items(), key=lambda f: (-f[1], f[0]))  # ties keep the domain's order
    return [(total, *pairs[i]) for i, total in ranked]


def infer_interface(
    domain: Domain,
    text: str,
    model: Model,
    trace: list[dict[str, Any]],
    strategy: Strategy = STRATEGIES["greedy"],
    reading: dict[str, Any] | None = None,
) -> tuple[list[str], str, list[ChoiceResult]]:
    """Return (--input values, --output) among the feasible ones.

    A plan-level ``strategy`` takes the interface whose best plan the request's evidence
    supports most (and whose types the text names), asking the model only among ties; a
    step-by-step one asks the model both questions, as the paper does. ``reading``, when
    given, is filled with how the interface was read (for ``--explain``).
    """
    reading = {} if reading is None else reading
    compiled = compiled_for(domain)
    try:
        options = feasible_interfaces(domain, compiled)
        if not options:
            raise NoPlanError(f"no task of '{domain.name}' has a valid plan")
        relevance = tool_evidence(domain, text, strategy) if strategy.plan_level else None
        if relevance is not None and not relevance.silent:
            return _by_evidence(
                domain, text, model, trace, options, relevance, compiled, reading, strategy
            )
        reading["how"] = "asked the model"
        return _by_questions(domain, text, model, trace, options, compiled)
    finally:  # the automata stay for the next request; this one's configurations do not
        for _, lookahead in compiled.values():
            lookahead.release()


def _prompt(domain: Domain, text: str, question: str, choices: list[str], chosen: list[str]) -> str:
    """Render the domain's interface template for one question."""
    template = domain.prompts.get("interface", DEFAULT_TEMPLATES["interface"])
    variables = {
        "task": text, "domain": domain.name, "intro": domain.intro,
        "question": question, "choices": choices, "chosen": chosen,
    }  # fmt: skip
    return render(template, variables, domain.prompt_dirs)


def _by_evidence(
    domain: Domain,
    text: str,
    model: Model,
    trace: list[dict[str, Any]],
    options: list[tuple[tuple[str, ...], list[str]]],
    relevance: Relevance,
    compiled: Compiled,
    reading: dict[str, Any],
    strategy: Strategy,
) -> tuple[list[str], str, list[ChoiceResult]]:
    described = _texts(domain)
    places = strategy.type_places(*described, text)  # [] unless the meaning signal runs
    # With the meaning signal the types named are those placed: worked out once, not twice.
    named = (
        [t for _, t in places] if strategy.reads_meaning else strategy.read_types(*described, text)
    )
    first, last = asked = part_order(domain, relevance)
    given_only, wanted_only = roles = type_roles(domain)
    learned = strategy.read_roles(domain, text)
    late = made_first(domain, text, relevance, places)
    ranked = rank_interfaces(
        domain, text, options, relevance, compiled, strategy.proposal, named, asked, roles, CLOSE,
        learned, late,
    )  # fmt: skip
    if not ranked:  # no beam reached a complete plan (very long ones): ask, as the paper does
        reading["how"] = "asked the model"
        return _by_questions(domain, text, model, trace, options, compiled)
    top = ranked[0][0]
    tied = [r for r in ranked if abs(r[0] - top) < 1e-9]
    reading.update(
        how="the best plan's evidence" if len(tied) == 1 else "the model, among tied readings",
        types_named=named,
        only_given=sorted(given_only & set(named)),
        only_wanted=sorted(wanted_only & set(named)),
        first_asked=None
        if first is None
        else {"part": first[0], "tool": first[1], "inputs": list(first[2])},
        last_asked=None if last is None else dict(zip(("part", "tool", "output"), last)),
        learned_reading=None if learned is None else learned.summary(),
        named_after_made=sorted(late),
        ranked=[
            {"inputs": list(combo), "output": output, "score": round(total, 3)}
            for total, combo, output in ranked[:4]
        ],
    )
    if len(tied) == 1:
        _note_close(reading, ranked, 0)
        return list(tied[0][1]), tied[0][2], []
    texts = [
        f"{describe_inputs(combo, domain)}, giving {_article(p)} {p}"
        for _, combo, output in tied
        for p in [_phrase(domain, output)]
    ]
    question = "What does the task give, and what must it produce?"
    prompt = _prompt(domain, text, question, texts, [])
    meter = RunMeter.wrap(model).fork(records=trace)
    result = meter.choose(ChoiceRequest(prompt, tuple(texts), "interface"))
    index = result.index if 0 <= result.index < len(tied) else 0
    _note_close(reading, ranked, index)
    return list(tied[index][1]), tied[index][2], [result]


def _note_close(
    reading: dict[str, Any], ranked: list[tuple[float, tuple[str, ...], str]], chosen: int
) -> None:
    """Record the best other reading when it scores within CLOSE of the chosen one.

    On the development sets a reading with a runner-up this close was right about a third of
    the time, against three in four otherwise, so it is worth telling the user.
    """
    others = [r for i, r in enumerate(ranked) if i != chosen]
    if others and ranked[chosen][0] - others[0][0] <= CLOSE + 1e-9:
        total, combo, output = others[0]
        behind = max(0.0, ranked[chosen][0] - total)
        reading["close"] = {"inputs": list(combo), "output": output, "behind": round(behind, 3)}


def _by_questions(
    domain: Domain,
    text: str,
    model: Model,
    trace: list[dict[str, Any]],
    options: Interfaces,
    compiled: Compiled | None = None,
) -> tuple[list[str], str, list[ChoiceResult]]:
    results: list[ChoiceResult] = []
    meter = RunMeter.wrap(model).fork(records=trace)
    options = settled_interfaces(domain, compiled) or options

    def ask(question: str, choices: list[str], chosen: list[str]) -> int:
        if len(choices) == 1:
            return 0
        prompt = _prompt(domain, text, question, choices, chosen)
        result = meter.choose(ChoiceRequest(prompt, tuple(choices), "interface"))
        results.append(result)
        return result.index

    texts = [describe_inputs(combo, domain) for combo, _ in options]
    pick = ask("What does the task give us to work with?", texts, [])
    combo, outs = options[pick]
    phrases = [f"{_article(p)} {p}" for p in (_phrase(domain, o) for o in outs)]
    out_pick = ask("What must the final result be?", phrases, [f"the task gives {texts[pick]}"])
    return list(combo), outs[out_pick], results
