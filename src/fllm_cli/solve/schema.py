"""Reading model replies: JSON and code extraction, and a small JSON-schema checker.

The checker supports the subset the FORMULATOR schemas use: ``type`` (one or a list),
``properties``, ``required``, ``additionalProperties`` (a schema or a bool), ``minProperties``
and ``enum``. Errors name the JSON path, so the model can be told exactly what to fix.
"""

from __future__ import annotations

import json
import re
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def type_name(value: Any) -> str:
    """Return the JSON type name of a Python value."""
    for name, types in _TYPES.items():
        if isinstance(value, bool) and name != "boolean":
            continue
        if isinstance(value, types):
            return name
    return type(value).__name__


def _type_ok(value: Any, wanted: str | list[str]) -> bool:
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    actual = type_name(value)
    return actual in names or (actual == "integer" and "number" in names)


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Return every violation of ``schema`` by ``value`` as ``path: message``."""
    errors: list[str] = []
    wanted = schema.get("type")
    if wanted is not None and not _type_ok(value, wanted):
        names = wanted if isinstance(wanted, str) else " or ".join(wanted)
        return [f"{path}: expected {names}, got {type_name(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: must be one of {schema['enum']}, got {value!r}")
    if isinstance(value, dict):
        errors += _object(value, schema, path)
    return errors


def _object(value: dict[str, Any], schema: dict[str, Any], path: str) -> list[str]:
    errors: list[str] = []
    for key in schema.get("required", []):
        if key not in value:
            errors.append(f"{path}: missing required field '{key}'")
    if len(value) < schema.get("minProperties", 0):
        errors.append(f"{path}: needs at least {schema['minProperties']} entr(y/ies)")
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        where = f"{path}.{key}"
        if key in props:
            errors += validate(item, props[key], where)
        elif extra is False:
            errors.append(f"{where}: unexpected field (allowed: {', '.join(props)})")
        elif isinstance(extra, dict):
            errors += validate(item, extra, where)
    return errors


VARIABLE: dict[str, Any] = {
    "type": "object",
    "required": [
        "name",
        "SMT_variable",
        "number_of_variables",
        "data_source",
        "value",
        "specific_requirement",
    ],
    "properties": {
        "name": {"type": ["string", "null"]},
        "SMT_variable": {"type": ["boolean", "null"]},
        "number_of_variables": {"type": ["integer", "string", "null"]},
        "data_source": {"type": ["string", "null"]},
        "value": {"type": ["string", "number", "array", "object", "boolean", "null"]},
        "specific_requirement": {"type": ["string", "null"]},
    },
}

MULTI_CONSTRAINT: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": VARIABLE,
}

STAGES = ("objects", "predicates", "actions", "update", "goal")
_STAGE: dict[str, Any] = {"type": "object", "minProperties": 1, "additionalProperties": VARIABLE}

MULTI_STEP: dict[str, Any] = {
    "type": "object",
    "required": list(STAGES),
    "properties": {stage: _STAGE for stage in STAGES},
    "additionalProperties": False,
}


# What a FORMULATOR reply is decoded under: a grammar for the embedded model, ``response_format``
# for API models that take one. The checked schemas above, with "value" narrowed to JSON a
# decoder can spell (the content languages refuse unconstrained values); replies are still
# checked against the schemas above, so a back end that ignores the hint loses nothing.
_VALUE_DECODED: dict[str, Any] = {
    "anyOf": [
        {"type": ["string", "number", "boolean", "null"]},
        {"type": "array", "items": {"type": ["string", "number"]}},
    ]
}
VARIABLE_DECODED: dict[str, Any] = {
    "type": "object",
    "properties": {
        name: (_VALUE_DECODED if name == "value" else rule)
        for name, rule in VARIABLE["properties"].items()
    },
    "required": list(VARIABLE["required"]),
    "additionalProperties": False,
}
_TABLE_DECODED: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": VARIABLE_DECODED,
}


def reply_schema(multi_step: bool) -> dict[str, Any]:
    """Return the JSON schema a FORMULATOR reply is decoded under."""
    if not multi_step:
        return _TABLE_DECODED
    return {
        "type": "object",
        "properties": {stage: _TABLE_DECODED for stage in STAGES},
        "required": list(STAGES),
        "additionalProperties": False,
    }


class ReplyError(ValueError):
    """A reply that cannot be read; the message is what the model is told."""


_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def extract_json(reply: str) -> Any:
    """Return the JSON value in a reply (a fenced block, else the outermost braces)."""
    candidates = [body for lang, body in _FENCE.findall(reply) if lang.lower() in ("json", "")]
    start, end = reply.find("{"), reply.rfind("}")
    if start >= 0 and end > start:
        candidates.append(reply[start : end + 1])
    if not candidates:
        raise ReplyError("the reply contains no JSON object")
    first_error = ""
    for text in candidates:
        for attempt in (text, re.sub(r",(\s*[}\]])", r"\1", text)):
            try:
                return json.loads(attempt)
            except json.JSONDecodeError as exc:
                first_error = (
                    first_error
                    or f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
                )
    raise ReplyError(first_error)


def extract_code(reply: str) -> str:
    """Return the Python code of a reply: its fenced python blocks, else the whole reply."""
    blocks = [body for lang, body in _FENCE.findall(reply) if lang.lower() in ("python", "py", "")]
    code = "\n".join(blocks) if blocks else reply
    return code.strip() + "\n"


def check_formulation(reply: str, multi_step: bool) -> tuple[Any, list[str]]:
    """Parse a FORMULATOR reply and check it; return the value and the list of errors."""
    try:
        value = extract_json(reply)
    except ReplyError as exc:
        return None, [str(exc)]
    return value, validate(value, MULTI_STEP if multi_step else MULTI_CONSTRAINT)
