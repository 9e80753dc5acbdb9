"""Read OpenAI-style tool lists (and MCP ``tools/list`` results) and write fllm tool domains.

A tool of a tool domain takes typed inputs in order and gives one typed output; the planner
chains tools whose types meet. So the importer decides, for each tool:

* which parameters are *inputs* the planner feeds (the required ones whose values are data),
  and which are *settings* it leaves alone (optional parameters, enums and constants: a call
  gets them from the bindings file, or goes without);
* each input's *type*: from ``x-fllm-type`` on the parameter's schema, else from the mapping
  file, else from the JSON Schema type and format (a string with ``format: uri`` is a url, an
  integer or number is a number, an object is json, ...);
* the output type: ``x-fllm-output`` on the tool, the mapping file, an MCP tool's
  ``outputSchema``, else text (OpenAI tool lists do not say what a tool returns).

Every decision is written next to the tool as a comment; schema constructs the importer does
not read (``oneOf``, ``$ref``, ...) are reported, never dropped silently.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.errors import UsageError

# JSON Schema string formats and media types with a type of their own.
FORMATS = {
    "uri": "url",
    "url": "url",
    "iri": "url",
    "uri-reference": "url",
    "email": "email",
    "idn-email": "email",
    "date": "date",
    "date-time": "datetime",
    "time": "time",
    "duration": "duration",
    "binary": "file",
    "byte": "file",
    "path": "path",
}
MEDIA = ("image", "audio", "video")
# What each type the importer may write means, for the domain's modality descriptions.
DESCRIPTIONS = {
    "text": "plain text",
    "number": "a number",
    "boolean": "true or false",
    "list": "a JSON list",
    "json": "a JSON value (an object, usually)",
    "url": "a URL",
    "email": "an e-mail address",
    "date": "a calendar date (YYYY-MM-DD)",
    "datetime": "a date and time (ISO 8601)",
    "time": "a time of day",
    "duration": "a duration (ISO 8601)",
    "file": "a file's content (base64)",
    "path": "a path to a file",
    "image": "an image",
    "audio": "a sound recording",
    "video": "a video",
}
UNREAD = ("oneOf", "anyOf", "allOf", "$ref", "not", "if", "patternProperties")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


@dataclass
class ImportedTool:
    """One tool as the importer read it."""

    name: str
    description: str
    inputs: list[tuple[str, str]]  # (parameter, type), in the order a plan feeds them
    output: str
    settings: dict[str, Any] = field(default_factory=dict)  # parameter -> default (or None)
    decisions: list[str] = field(default_factory=list)  # one line each, for the YAML comment
    mcp_tool: str | None = None


@dataclass
class ImportReport:
    """The tools read, the tools left out (and why), and problems worth a warning."""

    tools: list[ImportedTool]
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def one_line(text: Any, limit: int = 160) -> str:
    """Return untrusted text as one printable line (for comments and messages)."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _entries(doc: Any, where: str) -> list[Any]:
    """Return the list of tool entries of any of the accepted shapes."""
    if isinstance(doc, dict) and isinstance(doc.get("tools"), list):
        return list(doc["tools"])
    if isinstance(doc, dict) and isinstance(doc.get("functions"), list):
        return list(doc["functions"])
    if isinstance(doc, list):
        return doc
    raise UsageError(
        f"{where}: expected a list of tools, or an object with a 'tools' list",
        hint="OpenAI tool lists look like [{'type': 'function', 'function': {...}}, ...]",
    )


def _function(entry: Any) -> tuple[dict[str, Any] | None, str]:
    """Return (the function object, its kind) of one entry: openai, function or mcp."""
    if not isinstance(entry, dict):
        return None, ""
    if isinstance(entry.get("function"), dict):
        return entry["function"], "openai"
    if "inputSchema" in entry:
        return entry, "mcp"
    if "name" in entry:
        return entry, "function"
    return None, ""


def modality_of(schema: Any, override: str | None = None) -> tuple[str, str]:
    """Return (type, why) for one JSON schema."""
    if override:
        return _checked_type(override), "from the mapping file"
    if not isinstance(schema, dict):
        return "json", "no schema: json"
    if isinstance(schema.get("x-fllm-type"), str):
        return _checked_type(schema["x-fllm-type"]), "x-fllm-type"
    unread = [k for k in UNREAD if k in schema]
    if unread:
        return "json", f"{', '.join(unread)} not read: json"
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) != 1:
            return "json", f"several types {kind}: json"
        kind = kinds[0]
    if kind == "string":
        media = str(schema.get("contentMediaType", ""))
        top = media.split("/")[0]
        if top in MEDIA:
            return top, f"string of media type {one_line(media, 40)}"
        fmt = schema.get("format")
        if isinstance(fmt, str) and fmt in FORMATS:
            return FORMATS[fmt], f"string with format {fmt}"
        return "text", "string"
    if kind in ("integer", "number"):
        return "number", str(kind)
    if kind == "boolean":
        return "boolean", "boolean"
    if kind == "array":
        return "list", "array"
    if kind == "object":
        return "json", "object"
    return "json", "no type given: json"


def _checked_type(name: str) -> str:
    if not _NAME.match(name):
        raise UsageError(
            f"type name {one_line(name, 60)!r} must be lower case letters, digits and _ "
            "(at most 40, starting with a letter)"
        )
    return name


def read_tool_list(doc: Any, where: str, mapping: dict[str, Any] | None = None) -> ImportReport:
    """Read the tools of a parsed tool list; ``mapping`` is the parsed mapping file."""
    overrides = _mapping(mapping or {}, where)
    report = ImportReport([])
    seen: set[str] = set()
    for n, entry in enumerate(_entries(doc, where), 1):
        fn, kind = _function(entry)
        if fn is None or not isinstance(fn.get("name"), str) or not fn["name"].strip():
            report.skipped.append(f"entry {n}: not a tool (no name)")
            continue
        name = fn["name"].strip()
        shown = one_line(name, 60)
        if name in seen:
            report.skipped.append(f"{shown}: a second tool of that name")
            continue
        seen.add(name)
        tool = _read_tool(fn, kind, overrides.get(name, {}), report)
        if tool is None:
            continue
        if not tool.inputs:
            report.skipped.append(f"{shown}: no parameter the planner can feed (it takes none)")
            continue
        report.tools.append(tool)
    unknown = sorted(set(overrides) - seen)
    if unknown:
        report.problems.append(f"the mapping file names tools the list does not have: {unknown}")
    if not report.tools:
        raise UsageError(
            f"{where}: no tool could be imported"
            + (f" ({'; '.join(report.skipped[:3])})" if report.skipped else "")
        )
    return report


def _mapping(mapping: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(mapping, dict) or not isinstance(mapping.get("tools", {}), dict):
        raise UsageError("the mapping file must be a mapping with a 'tools' mapping")
    out: dict[str, dict[str, Any]] = {}
    for name, body in mapping.get("tools", {}).items():
        if not isinstance(body, dict):
            raise UsageError(f"the mapping file: tool '{one_line(name, 60)}' must be a mapping")
        out[str(name)] = body
    return out


def _read_tool(
    fn: dict[str, Any], kind: str, override: dict[str, Any], report: ImportReport
) -> ImportedTool | None:
    name = fn["name"].strip()
    shown = one_line(name, 60)
    schema = fn.get("inputSchema") if kind == "mcp" else fn.get("parameters")
    schema = schema if isinstance(schema, dict) else {"type": "object", "properties": {}}
    found = schema.get("properties")
    props: dict[str, Any] = found if isinstance(found, dict) else {}
    listed = schema.get("required")
    required = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
    given = override.get("inputs")
    typed: dict[str, Any] = given if isinstance(given, dict) else {}
    forced_settings = set(override.get("settings") or [])
    tool = ImportedTool(name, one_line(fn.get("description") or "", 400), [], "text")
    tool.mcp_tool = name if kind == "mcp" else None
    for extra in ("additionalProperties", "patternProperties"):
        if schema.get(extra) not in (None, False):
            report.problems.append(f"{shown}: {extra} in its parameters is not read")
    for param, sub in props.items():
        sub = sub if isinstance(sub, dict) else {}
        if param in forced_settings:
            tool.settings[param] = sub.get("default")
            tool.decisions.append(f"{param}: a setting (the mapping file)")
            continue
        if "enum" in sub or "const" in sub:
            tool.settings[param] = sub.get("default", sub.get("const"))
            tool.decisions.append(f"{param}: one of fixed values, a setting (not planned)")
            continue
        if param not in required and param not in typed:
            tool.settings[param] = sub.get("default")
            tool.decisions.append(f"{param}: optional, a setting (not planned)")
            continue
        modality, why = modality_of(sub, typed.get(param))
        if "not read" in why or "several types" in why:
            report.problems.append(f"{shown}: parameter {one_line(param, 40)}: {why}")
        tool.inputs.append((param, modality))
        tool.decisions.append(f"{param}: {modality} ({why})")
    missing = [r for r in required if r not in props]
    if missing:
        report.problems.append(f"{shown}: required parameters without a schema: {missing}")
        for param in missing:
            tool.inputs.append((param, "json"))
            tool.decisions.append(f"{param}: json (required, no schema)")
    out_override = override.get("output")
    if isinstance(out_override, str):
        tool.output, why = _checked_type(out_override), "the mapping file"
    elif isinstance(fn.get("x-fllm-output"), str):
        tool.output, why = _checked_type(fn["x-fllm-output"]), "x-fllm-output"
    elif isinstance(fn.get("outputSchema"), dict):
        tool.output, why = modality_of(_unwrapped(fn["outputSchema"]))
        why = f"outputSchema: {why}"
    else:
        tool.output, why = "text", "not declared; edit if it returns something else"
    tool.decisions.append(f"returns {tool.output} ({why})")
    return tool


def _unwrapped(schema: dict[str, Any]) -> Any:
    """An MCP server that returns a plain value wraps it as {"result": VALUE}: read VALUE."""
    props = schema.get("properties")
    if (
        isinstance(props, dict)
        and set(props) == {"result"}
        and schema.get("required") == ["result"]
    ):
        return props["result"]
    return schema


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text, ensure_ascii=False)


def write_domain(report: ImportReport, name: str, source: str) -> str:
    """Return the tool domain's YAML text, the importer's decisions as comments."""
    used = sorted({m for t in report.tools for _, m in t.inputs} | {t.output for t in report.tools})
    lines = [
        f"# Imported by `fllm import-tools` from {one_line(source, 120)}: "
        f"{len(report.tools)} tool(s).",
        "# Each tool's comment says how its parameters were read. Inputs are the parameters a",
        "# plan feeds, in order; edit their types so that tools chain the way you mean (the",
        "# planner connects an output to an input of the same type).",
    ]
    for line in report.skipped:
        lines.append(f"# not imported: {one_line(line)}")
    for line in report.problems:
        lines.append(f"# note: {one_line(line)}")
    lines += [
        "fllm: 1",
        f"name: {_q(name)}",
        "kind: tools",
        f"description: {_q('Tools imported from ' + one_line(source, 120))}",
        "limits:",
        "  max_uses: 1  # each tool at most once per plan; null for no limit",
        "modalities:",
    ]
    for m in used:
        lines.append(f"  {m}: {{phrase: {_q(m)}, description: {_q(DESCRIPTIONS.get(m, m))}}}")
    lines.append("tools:")
    for t in report.tools:
        signature = ", ".join(f"{p}: {m}" for p, m in t.inputs)
        lines.append(f"  # {one_line(t.name, 60)}({signature}) -> {t.output}")
        for decision in t.decisions:
            lines.append(f"  #   {one_line(decision)}")
        lines += [
            f"  - name: {_q(t.name)}",
            f"    description: {_q(t.description or t.name)}",
            f"    inputs: [{', '.join(m for _, m in t.inputs)}]",
            f"    output: {t.output}",
        ]
    return "\n".join(lines) + "\n"


def write_bindings(report: ImportReport, domain_file: str, server: list[str] | None) -> str:
    """Return a bindings skeleton: each tool's parameters, and how to call it when known."""
    lines = [
        f"# How `fllm run` carries out the tools of {one_line(domain_file, 120)}.",
        "# Give each tool one of:",
        "#   python: MODULE:FUNCTION        (called with the parameters by name)",
        "#   command: [PROGRAM, ARG, ...]   ({name} in an argument is that parameter; no shell)",
        "#   mcp: {server: [PROGRAM, ARG, ...], tool: NAME}",
        "# args: the plan's inputs, in order, become these parameters; with: fixed settings.",
        "tools:",
    ]
    for t in report.tools:
        lines.append(f"  {_q(t.name)}:")
        lines.append(f"    args: [{', '.join(_q(p) for p, _ in t.inputs)}]")
        fixed = {k: v for k, v in t.settings.items() if v is not None}
        if fixed:
            lines.append(f"    with: {json.dumps(fixed, ensure_ascii=False)}")
        if server is not None and t.mcp_tool is not None:
            argv = ", ".join(_q(a) for a in server)
            lines.append(f"    mcp: {{server: [{argv}], tool: {_q(t.mcp_tool)}}}")
        else:
            lines.append("    python: null  # MODULE:FUNCTION")
    return "\n".join(lines) + "\n"
