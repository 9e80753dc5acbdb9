"""YAML with source locations.

``load`` parses YAML into plain Python values wrapped so that every mapping, sequence and scalar
remembers where it came from. A schema walker (:class:`Reader`) then checks types and keys and
collects located diagnostics instead of stopping at the first problem.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from fllm_cli.diagnostics import Diagnostic, Location, did_you_mean


@dataclass
class Node:
    """A YAML value with its location; ``value`` holds Python scalars or child nodes."""

    value: Any
    loc: Location
    key_locs: dict[str, Location] = field(default_factory=dict)

    @property
    def form(self) -> str:
        """Return 'mapping', 'sequence' or the scalar's type name."""
        if isinstance(self.value, dict):
            return "mapping"
        if isinstance(self.value, list):
            return "sequence"
        if self.value is None:
            return "null"
        return type(self.value).__name__

    def plain(self) -> Any:
        """Return the value with all location wrappers removed."""
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


# Bounds for untrusted YAML: nesting depth, and nodes built after aliases are followed (a small
# file can otherwise expand to billions of nodes through nested aliases).
MAX_DEPTH = 64
MAX_NODES = 200_000


class _TooDeep(yaml.MarkedYAMLError):
    pass


class _Depth:
    """Refuses nesting deeper than MAX_DEPTH while composing (put before a composer)."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _TooDeep(
                    problem=f"nested deeper than {MAX_DEPTH} levels (fllm's limit for YAML files)",
                    problem_mark=self.peek_event().start_mark,  # type: ignore[attr-defined]
                )
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self.depth -= 1


class _Loader(_Depth, yaml.SafeLoader):
    """The pure-Python safe loader, with the depth bound."""


def _fast_loader() -> Any:
    """Return a loader with libyaml's scanner and parser (about 7 times faster on a large
    domain) under the Python composer, which keeps the depth bound and the marks; None when
    PyYAML was built without libyaml."""
    try:
        from yaml._yaml import CParser
    except ImportError:
        return None

    class Fast(_Depth, Composer, CParser, SafeConstructor, Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    return Fast


_Fast: Any = _fast_loader()


class _Budget:
    """Counts nodes built; follows aliases, but never in a circle or without end."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.nodes = 0
        self.open: set[int] = set()
        self.failed: Diagnostic | None = None

    def enter(self, node: yaml.Node) -> bool:
        """Return False (and record why) when ``node`` may not be built."""
        self.nodes += 1
        if id(node) in self.open:
            self.failed = self.failed or Diagnostic(
                "error", "a YAML alias refers to a node that contains it", _loc(node, self.path)
            )
            return False
        if self.nodes > MAX_NODES:
            self.failed = self.failed or Diagnostic(
                "error",
                f"the file expands to more than {MAX_NODES} values (YAML aliases nested "
                "too many times?)",
                _loc(node, self.path),
            )
            return False
        return True


class _Unsure(Exception):
    """The direct builder leaves this text to the composer (aliases, odd keys, errors)."""


def _direct(text: str, path: str, diags: list[Diagnostic]) -> Node:
    """Build the located tree straight from libyaml's events (no yaml.Node objects, one
    pass): on a large domain about twice as fast as composing and converting. Raises
    :class:`_Unsure` for what the composer path does differently or reports better."""
    if _Fast is None:
        raise _Unsure
    parser = _Fast(text)
    # (container, key locations, the key waiting for its value, its location) per open level
    stack: list[tuple[Any, dict[str, Location], Any, Location | None]] = []
    root: Node | None = None
    count = documents = 0
    try:
        while True:
            event = parser.get_event()
            kind = type(event)
            if kind in (yaml.StreamStartEvent, yaml.DocumentEndEvent):
                continue
            if kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _Unsure
                continue
            if kind is yaml.StreamEndEvent:
                break
            if kind is yaml.AliasEvent or getattr(event, "anchor", None) is not None:
                raise _Unsure
            if kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
                container, key_locs, _, _ = stack.pop()
                done = container
            else:
                mark = event.start_mark
                loc = Location(path, mark.line + 1, mark.column + 1)
                top = stack[-1] if stack else None
                is_key = top is not None and isinstance(top[0].value, dict) and top[3] is None
                count += not is_key  # values, as the composer path counts them
                if count > MAX_NODES or len(stack) >= MAX_DEPTH:
                    raise _Unsure
                if kind is yaml.ScalarEvent:
                    done = Node(_scalar(parser, event, loc, diags, is_key), loc)
                else:
                    value: Any = {} if kind is yaml.MappingStartEvent else []
                    stack.append((Node(value, loc), {}, None, None))
                    continue
            if not stack:
                root = done
                continue
            parent, key_locs, key, key_loc = stack[-1]
            if isinstance(parent.value, list):
                parent.value.append(done)
            elif key_loc is None:  # a key
                if not isinstance(done.value, (str, int, float, bool, type(None))):
                    raise _Unsure  # a mapping or sequence as a key
                stack[-1] = (parent, key_locs, str(done.value), done.loc)
            else:
                if key in parent.value:
                    diags.append(Diagnostic("error", f"duplicate key '{key}'", key_loc))
                parent.value[key] = done
                key_locs[key] = key_loc
                parent.key_locs = key_locs
                stack[-1] = (parent, key_locs, None, None)
    except (yaml.YAMLError, RecursionError):
        raise _Unsure from None
    return root if root is not None else Node({}, Location(path, 1, 1))


def _scalar(parser: Any, event: Any, loc: Location, diags: list[Diagnostic], is_key: bool) -> Any:
    """Return a scalar's value as the composer and constructor would make it."""
    tag = event.tag
    if tag is None or tag == "!":
        tag = parser.resolve(yaml.ScalarNode, event.value, event.implicit)
    if tag == _STR:
        return event.value
    if is_key:  # a number, date or yes/no as a key: the composer path spells it
        raise _Unsure
    node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
    try:
        value = parser.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        diags.append(Diagnostic("error", f"bad value: {exc}", loc))
        return None
    except ValueError as exc:  # e.g. an integer longer than Python converts
        diags.append(Diagnostic("error", f"bad value: {str(exc)[:120]}", loc))
        return None
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(event.value)


def _compose(text: str) -> Any:
    """Compose with libyaml when it is there; on any error parse again in Python, whose
    messages say more ("expected ',' or ']', but got ':'")."""
    if _Fast is not None:
        try:
            return yaml.compose(text, Loader=_Fast)
        except (yaml.YAMLError, RecursionError):
            pass
    return yaml.compose(text, Loader=_Loader)


def load(text: str, path: str) -> tuple[Node | None, list[Diagnostic]]:
    """Parse ``text``; return the located tree (None on syntax error) and diagnostics."""
    diagnostics: list[Diagnostic] = []
    try:
        return _direct(text, path, diagnostics), diagnostics
    except _Unsure:
        diagnostics = []
    try:
        root = _compose(text)
    except RecursionError:
        message = f"YAML nested too deeply (fllm reads at most {MAX_DEPTH} levels)"
        diagnostics.append(Diagnostic("error", message, Location(path, 1, 1)))
        return None, diagnostics
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        loc = Location(path, mark.line + 1, mark.column + 1) if mark else Location(path)
        problem = exc.problem or exc.context or "invalid YAML"
        what = "YAML" if isinstance(exc, _TooDeep) else "YAML syntax error"
        diagnostics.append(Diagnostic("error", f"{what}: {problem}", loc))
        return None, diagnostics
    except yaml.YAMLError as exc:
        diagnostics.append(Diagnostic("error", f"YAML error: {exc}", Location(path)))
        return None, diagnostics
    if root is None:
        return Node({}, Location(path, 1, 1)), diagnostics
    constructor = _Loader("")
    budget = _Budget(path)
    tree = _convert(root, path, constructor, diagnostics, budget)
    if budget.failed is not None:
        return None, [*diagnostics, budget.failed]
    return tree, diagnostics


_STR = "tag:yaml.org,2002:str"


def _loc(node: yaml.Node, path: str) -> Location:
    return Location(path, node.start_mark.line + 1, node.start_mark.column + 1)


def _convert(
    node: yaml.Node,
    path: str,
    constructor: yaml.SafeLoader,
    diags: list[Diagnostic],
    budget: _Budget,
) -> Node:
    loc = _loc(node, path)
    if not budget.enter(node):
        return Node(None, loc)
    budget.open.add(id(node))
    try:
        return _convert_node(node, loc, path, constructor, diags, budget)
    finally:
        budget.open.discard(id(node))


def _convert_node(
    node: yaml.Node,
    loc: Location,
    path: str,
    constructor: yaml.SafeLoader,
    diags: list[Diagnostic],
    budget: _Budget,
) -> Node:
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Node] = {}
        key_locs: dict[str, Location] = {}
        for key_node, value_node in node.value:
            try:
                key = (
                    key_node.value
                    if key_node.tag == _STR
                    else constructor.construct_object(key_node, deep=True)
                )
            except (yaml.YAMLError, ValueError, TypeError):
                key = str(key_node.value)[:80]
            key_loc = _loc(key_node, path)
            if not isinstance(key, str):
                key = str(key)
            if key in out:
                diags.append(Diagnostic("error", f"duplicate key '{key}'", key_loc))
            out[key] = _convert(value_node, path, constructor, diags, budget)
            key_locs[key] = key_loc
        return Node(out, loc, key_locs)
    if isinstance(node, yaml.SequenceNode):
        children = [_convert(child, path, constructor, diags, budget) for child in node.value]
        return Node(children, loc)
    if node.tag == _STR:  # most scalars: the text is the value
        return Node(node.value, loc)
    try:
        value = constructor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        diags.append(Diagnostic("error", f"bad value: {exc}", loc))
        value = None
    except ValueError as exc:  # e.g. an integer longer than Python converts
        diags.append(Diagnostic("error", f"bad value: {str(exc)[:120]}", loc))
        value = None
    if not isinstance(value, (str, int, float, bool, type(None))):
        value = str(node.value)
    return Node(value, loc)


class Reader:
    """Typed access to a located tree, recording diagnostics for every mismatch."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.diagnostics: list[Diagnostic] = []

    def error(self, message: str, loc: Location | None) -> None:
        """Record an error."""
        self.diagnostics.append(Diagnostic("error", message, loc))

    def warning(self, message: str, loc: Location | None) -> None:
        """Record a warning."""
        self.diagnostics.append(Diagnostic("warning", message, loc))

    def mapping(self, node: Node | None, what: str, allowed: set[str] | None = None) -> Node | None:
        """Check ``node`` is a mapping with only ``allowed`` keys (did-you-mean on typos)."""
        if node is None:
            return None
        if not isinstance(node.value, dict):
            self.error(f"{what} must be a mapping, got {node.form}", node.loc)
            return None
        if allowed is not None:
            for key in node.value:
                if key not in allowed:
                    hint = did_you_mean(key, allowed)
                    self.error(
                        f"unknown key '{key}' in {what}{hint}", node.key_locs.get(key, node.loc)
                    )
        return node

    def items(self, node: Node | None) -> Iterator[tuple[str, Node, Location]]:
        """Iterate ``(key, value, key location)`` over a mapping node."""
        if node is None or not isinstance(node.value, dict):
            return
        for key, value in node.value.items():
            yield key, value, node.key_locs.get(key, value.loc)

    def sequence(self, node: Node | None, what: str) -> list[Node]:
        """Return the children of a sequence node (a lone scalar counts as one item)."""
        if node is None or node.value is None:
            return []
        if isinstance(node.value, list):
            return list(node.value)
        self.error(f"{what} must be a list, got {node.form}", node.loc)
        return []

    def string(self, node: Node | None, what: str, required: bool = False) -> str | None:
        """Return a string scalar (numbers are accepted and converted)."""
        if node is None or node.value is None:
            if required and node is not None:
                self.error(f"{what} must not be empty", node.loc)
            return None
        if isinstance(node.value, (bool, dict, list)):
            self.error(f"{what} must be a string, got {node.form}", node.loc)
            return None
        text = str(node.value)
        if required and not text.strip():
            self.error(f"{what} must not be empty", node.loc)
            return None
        return text

    def integer(
        self, node: Node | None, what: str, minimum: int | None = None, allow_null: bool = False
    ) -> int | None:
        """Return an integer scalar, checking a lower bound."""
        if node is None:
            return None
        if node.value is None and allow_null:
            return None
        if isinstance(node.value, bool) or not isinstance(node.value, int):
            self.error(f"{what} must be an integer, got {node.form}", node.loc)
            return None
        if minimum is not None and node.value < minimum:
            self.error(f"{what} must be at least {minimum}, got {node.value}", node.loc)
            return None
        return int(node.value)

    def boolean(self, node: Node | None, what: str) -> bool | None:
        """Return a boolean scalar."""
        if node is None:
            return None
        if not isinstance(node.value, bool):
            self.error(f"{what} must be true or false, got {node.form}", node.loc)
            return None
        return bool(node.value)

    def require(self, mapping: Node | None, key: str, what: str) -> Node | None:
        """Return child ``key`` of a mapping, recording an error if it is absent."""
        if mapping is None or not isinstance(mapping.value, dict):
            return None
        if key not in mapping.value:
            self.error(f"{what} is missing required key '{key}'", mapping.loc)
            return None
        child: Node = mapping.value[key]
        return child

    @staticmethod
    def get(mapping: Node | None, key: str) -> Node | None:
        """Return child ``key`` of a mapping or None."""
        if mapping is None or not isinstance(mapping.value, dict):
            return None
        child: Node | None = mapping.value.get(key)
        return child
