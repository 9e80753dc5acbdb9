"""Bindings: how each tool of a domain is carried out (a Python callable, a command, MCP).

A bindings file is YAML::

    tools:
      word_count:
        args: [text]                 # the plan's inputs, in order, become these parameters
        python: mypackage.tools:word_count
      shout:
        args: [text]
        command: [python3, shout.py, "{text}"]   # {name}: a parameter; never a shell
        timeout: 10
      search:
        args: [query]
        with: {limit: 5}             # fixed settings added to every call
        mcp: {server: [python3, server.py], tool: search}

Python callables are configuration the user chose, like ``--tool-module``: they run inside the
fllm process. Commands run without a shell, with the arguments as separate words.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fllm_cli.errors import UsageError
from fllm_cli.execute.failure import ToolFailure

OUTPUT_CAP = 10 * 1024 * 1024  # bytes of a command's output read back
DEFAULT_TIMEOUT = 60.0


@dataclass
class Binding:
    """How one tool is called."""

    tool: str
    args: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    python: str | None = None
    command: tuple[str, ...] | None = None
    mcp_server: tuple[str, ...] | None = None
    mcp_tool: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    base: Path = Path(".")
    _function: Callable[..., Any] | None = None

    @property
    def how(self) -> str:
        if self.python:
            return f"python {self.python}"
        if self.command:
            return "command " + " ".join(self.command[:3])
        return f"mcp {self.mcp_tool}"

    def arguments(self, values: list[Any]) -> dict[str, Any]:
        """Name the plan's input values by the binding's parameters, settings added."""
        if len(values) != len(self.args):
            raise ToolFailure(
                f"the plan gives {len(values)} input(s) but the binding names {len(self.args)}"
            )
        return {**self.settings, **dict(zip(self.args, values))}

    def call(self, values: list[Any]) -> Any:
        """Call the tool with the plan's input values; raise ToolFailure when it fails."""
        kwargs = self.arguments(values)
        if self.python:
            return self._call_python(kwargs)
        if self.command:
            return self._call_command(kwargs)
        from fllm_cli.execute.mcp_client import call_tool  # only when a binding needs it

        assert self.mcp_server is not None and self.mcp_tool is not None
        return call_tool(self.mcp_server, self.mcp_tool, kwargs, self.timeout, self.base)

    def _call_python(self, kwargs: dict[str, Any]) -> Any:
        if self._function is None:
            self._function = load_callable(str(self.python), self.base)
        try:
            return self._function(**kwargs)
        except Exception as exc:
            raise ToolFailure(
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            ) from None

    def _call_command(self, kwargs: dict[str, Any]) -> str:
        assert self.command is not None
        argv = [_fill(word, kwargs) for word in self.command]
        try:
            done = subprocess.run(
                argv,
                cwd=self.base,
                capture_output=True,
                timeout=self.timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            raise ToolFailure(f"no such program: {argv[0]!r}") from None
        except subprocess.TimeoutExpired:
            raise ToolFailure(f"the command did not finish within {self.timeout:g} s") from None
        except OSError as exc:
            raise ToolFailure(f"cannot run {argv[0]!r}: {exc.strerror}") from None
        if len(done.stdout) > OUTPUT_CAP:
            raise ToolFailure(f"the command wrote more than {OUTPUT_CAP} bytes")
        if done.returncode != 0:
            last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1]
            raise ToolFailure(f"the command exited with {done.returncode}: {last[:200]}")
        return done.stdout.decode("utf-8", "replace").rstrip("\n")


def _fill(word: str, kwargs: dict[str, Any]) -> str:
    """Put parameter values into one argument: ``{name}`` is the value (text as it is, other
    values as JSON). Only whole names are replaced; nothing is ever read by a shell."""
    out = word
    for name, value in kwargs.items():
        token = "{" + name + "}"
        if token in out:
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            out = out.replace(token, shown)
    return out


def load_callable(spec: str, base: Path) -> Callable[..., Any]:
    """Import ``MODULE:FUNCTION`` (the bindings file's folder first on the path)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"python binding {spec!r} must be MODULE:FUNCTION")
    folder = str(base.resolve())
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"python binding {spec!r}: cannot import {module_name!r}: {exc}") from None
    finally:
        if added:
            sys.path.remove(folder)
    function = getattr(module, attr, None)
    if not callable(function):
        raise UsageError(f"python binding {spec!r}: {module_name} has no function {attr!r}")
    return function  # type: ignore[no-any-return]


def read_bindings(path: str) -> dict[str, Binding]:
    """Read a bindings file; every mistake is a one-line UsageError (a tool the plan uses
    without a binding is found when the run starts)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read the bindings file '{path}': {exc.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise UsageError(f"{where}: not valid YAML") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tools"), dict):
        raise UsageError(f"{path}: a bindings file is a mapping with a 'tools' mapping")
    base = Path(path).resolve().parent
    out: dict[str, Binding] = {}
    for name, body in doc["tools"].items():
        out[str(name)] = _binding(str(name), body, path, base)
    return out


def _binding(name: str, body: Any, path: str, base: Path) -> Binding:
    where = f"{path}: tool '{name}'"
    if not isinstance(body, dict):
        raise UsageError(f"{where} must be a mapping")
    unknown = set(body) - {"args", "with", "python", "command", "mcp", "timeout"}
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {sorted(unknown)}")
    args = body.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise UsageError(f"{where}: args must be a list of parameter names")
    settings = body.get("with") or {}
    if not isinstance(settings, dict):
        raise UsageError(f"{where}: with must be a mapping of fixed settings")
    timeout = body.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise UsageError(f"{where}: timeout must be a positive number of seconds")
    ways = [k for k in ("python", "command", "mcp") if body.get(k) not in (None, "", [])]
    if len(ways) != 1:
        raise UsageError(
            f"{where}: give exactly one of python, command or mcp"
            + (f" (it gives {', '.join(ways)})" if ways else " (it gives none)")
        )
    binding = Binding(name, tuple(args), dict(settings), timeout=float(timeout), base=base)
    way = ways[0]
    if way == "python":
        if not isinstance(body["python"], str) or ":" not in body["python"]:
            raise UsageError(f"{where}: python must be MODULE:FUNCTION")
        binding.python = body["python"]
    elif way == "command":
        binding.command = _argv(body["command"], f"{where}: command")
    else:
        mcp = body["mcp"]
        if not isinstance(mcp, dict) or not isinstance(mcp.get("tool"), str):
            raise UsageError(f"{where}: mcp must be {{server: [PROGRAM, ARG, ...], tool: NAME}}")
        binding.mcp_server = _argv(mcp.get("server"), f"{where}: mcp server")
        binding.mcp_tool = mcp["tool"]
    return binding


def _argv(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        raise UsageError(f"{where} must be a list of words (no shell reads it), not a string")
    if not isinstance(value, list) or not value or not all(isinstance(w, str) for w in value):
        raise UsageError(f"{where} must be a non-empty list of words")
    return tuple(os.path.expanduser(w) if i == 0 else w for i, w in enumerate(value))
