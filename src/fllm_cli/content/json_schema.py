"""JSON schemas, the supported subset, compiled to rules.

``type`` string / number / integer / boolean / null / object / array, ``properties`` (every
listed property is written, in the listed order), ``items``, ``minItems``/``maxItems``, ``enum``,
``const``, ``anyOf``/``oneOf``, and objects of any keys (``additionalProperties`` with a schema
and no ``properties``, ``minProperties``); other keywords are refused.
"""

from __future__ import annotations

import json
from typing import Any

from fllm_cli.content.rules import (
    MAX_REPEAT,
    Alt,
    Cls,
    LanguageError,
    Lit,
    Node,
    Ref,
    Rep,
    Seq,
    check_rules,
)

_JSON_WS = Rep(Cls(((9, 10), (13, 13), (32, 32))), 0, 20)
_JSON_SCHEMA_KEYS = {
    "type",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "additionalProperties",
    "minProperties",
    "title",
    "description",
    "$schema",
}


def _json_base_rules() -> dict[str, Node]:
    digits = Rep(Cls(((48, 57),)), 1, None)
    integer = Seq(
        (
            Rep(Lit("-"), 0, 1),
            Alt((Lit("0"), Seq((Cls(((49, 57),)), Rep(Cls(((48, 57),)), 0, 15))))),
        )
    )
    fraction = Rep(Seq((Lit("."), digits)), 0, 1)
    exponent = Rep(
        Seq((Cls(((69, 69), (101, 101))), Rep(Cls(((43, 43), (45, 45))), 0, 1), digits)), 0, 1
    )
    char = Alt(
        (
            Cls(((0, 31), (34, 34), (92, 92)), negated=True),
            Seq(
                (
                    Lit("\\"),
                    Cls(
                        (
                            (34, 34),
                            (47, 47),
                            (92, 92),
                            (98, 98),
                            (102, 102),
                            (110, 110),
                            (114, 114),
                            (116, 116),
                        )
                    ),
                )
            ),
            Seq((Lit("\\u"), Rep(Cls(((48, 57), (65, 70), (97, 102))), 4, 4))),
        )
    )
    return {
        "json-ws": _JSON_WS,
        "json-string": Seq((Lit('"'), Rep(char, 0, None), Lit('"'))),
        "json-integer": integer,
        "json-number": Seq((Ref("json-integer"), fraction, exponent)),
        "json-boolean": Alt((Lit("true"), Lit("false"))),
        "json-null": Lit("null"),
    }


class _SchemaCompiler:
    def __init__(self) -> None:
        self.rules: dict[str, Node] = {}
        self.count = 0

    def compile(self, schema: Any, where: str) -> Node:
        if schema is True or schema == {}:
            raise LanguageError(f"json schema {where}: an unconstrained value is not supported")
        if not isinstance(schema, dict):
            raise LanguageError(f"json schema {where}: expected an object")
        unknown = sorted(set(schema) - _JSON_SCHEMA_KEYS)
        if unknown:
            raise LanguageError(f"json schema {where}: unsupported keyword '{unknown[0]}'")
        if "const" in schema:
            return _json_literal(schema["const"])
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise LanguageError(f"json schema {where}: enum must be a non-empty list")
            return Alt(tuple(_json_literal(v) for v in values))
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = schema[key]
                if not isinstance(options, list) or not options:
                    raise LanguageError(f"json schema {where}: {key} must be a non-empty list")
                return Alt(
                    tuple(self.compile(o, f"{where}/{key}/{i}") for i, o in enumerate(options))
                )
        value_type = schema.get("type")
        if isinstance(value_type, list):
            return Alt(tuple(self.compile({**schema, "type": k}, where) for k in value_type))
        simple = {
            "string": "json-string",
            "number": "json-number",
            "integer": "json-integer",
            "boolean": "json-boolean",
            "null": "json-null",
        }
        if value_type in simple:
            return Ref(simple[str(value_type)])
        if value_type == "array":
            return self._array(schema, where)
        if value_type == "object" or "properties" in schema:
            return self._object(schema, where)
        raise LanguageError(f"json schema {where}: unsupported or missing type {value_type!r}")

    def _rule(self, node: Node) -> Ref:
        self.count += 1
        name = f"json-part-{self.count}"
        self.rules[name] = node
        return Ref(name)

    def _array(self, schema: dict[str, Any], where: str) -> Node:
        if "items" not in schema:
            raise LanguageError(f"json schema {where}: an array needs 'items'")
        item = self._rule(self.compile(schema["items"], f"{where}/items"))
        low = _count(schema, "minItems", where)
        high = _count(schema, "maxItems", where) if "maxItems" in schema else None
        ws = Ref("json-ws")
        more = Seq((ws, Lit(","), ws, item))
        if high == 0:
            body: Node = Seq(())
        else:
            rest = Rep(more, max(0, low - 1), None if high is None else high - 1)
            body = Seq((item, rest))
            if low == 0:
                body = Rep(body, 0, 1)
        return Seq((Lit("["), ws, body, ws, Lit("]")))

    def _object(self, schema: dict[str, Any], where: str) -> Node:
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise LanguageError(f"json schema {where}: properties must be an object")
        extra = schema.get("additionalProperties")
        if extra is True:
            raise LanguageError(
                f"json schema {where}: additionalProperties: true allows any value; "
                "give a schema for the values"
            )
        if not props and isinstance(extra, dict):
            return self._map(schema, extra, where)
        if isinstance(extra, dict):
            raise LanguageError(
                f"json schema {where}: additionalProperties with a schema works only without "
                "properties (an object of any keys)"
            )
        if _count(schema, "minProperties", where) > len(props):
            raise LanguageError(
                f"json schema {where}: minProperties needs additionalProperties with a schema "
                "(only the listed properties are written)"
            )
        ws = Ref("json-ws")
        parts: list[Node] = [Lit("{"), ws]
        for i, (key, sub) in enumerate(props.items()):
            if i:
                parts += [ws, Lit(","), ws]
            value = self._rule(self.compile(sub, f"{where}/properties/{key}"))
            parts += [_json_literal(str(key)), ws, Lit(":"), ws, value]
        parts += [ws, Lit("}")]
        return Seq(tuple(parts))

    def _map(self, schema: dict[str, Any], values: dict[str, Any], where: str) -> Node:
        """An object of any keys whose values all follow ``values`` (at least minProperties)."""
        low = _count(schema, "minProperties", where)
        value = self._rule(self.compile(values, f"{where}/additionalProperties"))
        ws = Ref("json-ws")
        entry = self._rule(Seq((Ref("json-string"), ws, Lit(":"), ws, value)))
        body: Node = Seq((entry, Rep(Seq((ws, Lit(","), ws, entry)), max(0, low - 1), None)))
        if low == 0:
            body = Rep(body, 0, 1)
        return Seq((Lit("{"), ws, body, ws, Lit("}")))


def _count(schema: dict[str, Any], key: str, where: str) -> int:
    """Return a count keyword (0 when absent): an integer from 0 to MAX_REPEAT."""
    value = schema.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPEAT:
        raise LanguageError(
            f"json schema {where}: {key} must be an integer from 0 to {MAX_REPEAT}, got {value!r}"
        )
    return value


def _json_literal(value: Any) -> Node:
    return Lit(json.dumps(value, ensure_ascii=False))


def parse_json_schema(text: str | dict[str, Any]) -> dict[str, Node]:
    """Compile a JSON schema (text or already parsed) of the supported subset to rules."""
    if isinstance(text, str):
        try:
            schema = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LanguageError(
                f"json schema is not JSON: {exc.msg} at column {exc.colno}"
            ) from None
    else:
        schema = text
    compiler = _SchemaCompiler()
    root = compiler.compile(schema, "#")
    rules = {"root": root, **compiler.rules, **_json_base_rules()}
    check_rules(rules, "json schema")
    return rules
