"""Grammar rules of JSON values that fit a JSON Schema, for the bundled model's turn grammars: a react
round's value under its playbook's `returns_schema` (runtime.local.react_grammar) and a served chat call's
structured reply or tool arguments (importers.langgraph.chat_grammar). Enums, strings, numbers, booleans,
null, arrays, objects (their required fields, in order) and `$ref`s into the root's `$defs`; what the
grammar cannot express (patterns, bounds) is left to the schema check that follows the answer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from runtime.local.gbnf import RuleSet, alternatives, literal, rule_name

TEXT_CHARS = 600
"""Characters of a string value."""
_STRING = '"\\"" [^"\\\\\\n`]{0,%d} "\\""'
_INTEGER = '"-"? ( "0" | [1-9] [0-9]{0,14} )'
_NUMBER = '"-"? ( "0" | [1-9] [0-9]{0,14} ) ( "." [0-9]{1,8} )?'


class SchemaValues:
    """Rules of JSON values of a schema (enums, strings, numbers, booleans, arrays, objects, `$ref`s into
    the root schema's `$defs`); an object's required fields only, in order."""

    def __init__(self, rules: RuleSet, root: Mapping[str, Any], *, string: str | None = None) -> None:
        self.rules = rules
        self.definitions: Mapping[str, Any] = root.get("$defs") or root.get("definitions") or {}
        self.string = string
        """The rule of a string value, when the caller has its own (bounded, never a stand-in); else any
        string of up to TEXT_CHARS characters."""

    def rule(self, name: str, schema: Any, depth: int = 0) -> str:
        rules = self.rules
        schema = self._resolved(schema if isinstance(schema, Mapping) else {})
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            options = alternatives(literal(json.dumps(item)) for item in schema["enum"])
            return rules.define(rule_name("v", name), options)
        if isinstance(schema.get("anyOf"), list) and depth < 3:
            options = [
                self.rule(f"{name}-{index}", option, depth + 1)
                for index, option in enumerate(schema["anyOf"])
            ]
            return rules.define(rule_name("v", name), alternatives(options))
        kind = schema.get("type")
        if kind == "string":
            return self._string()
        if kind == "integer":
            return rules.define("v-integer", _INTEGER)
        if kind == "number":
            return rules.define("v-number", _NUMBER)
        if kind == "boolean":
            return rules.define("v-boolean", '"true" | "false"')
        if kind == "null":
            return rules.define("v-null", '"null"')
        if kind == "array" and depth < 3:
            item = self.rule(f"{name}-item", schema.get("items") or {}, depth + 1)
            return rules.define(rule_name("v", name), f'"[" ( {item} ( ", " {item} ){{0,9}} )? "]"')
        if kind == "object" and isinstance(schema.get("properties"), Mapping) and depth < 3:
            properties = schema["properties"]
            required = [key for key in properties if key in set(schema.get("required") or ())]
            parts = [
                f"{literal((', ' if position else '') + json.dumps(key) + ': ')} "
                f"{self.rule(f'{name}-{key}', properties[key], depth + 1)}"
                for position, key in enumerate(required)
            ]
            return rules.define(rule_name("v", name), " ".join([literal("{"), *parts, literal("}")]))
        scalars = [
            self._string(),
            rules.define("v-number", _NUMBER),
            rules.define("v-boolean", '"true" | "false"'),
            rules.define("v-null", '"null"'),
        ]
        return rules.define("v-any", alternatives(scalars))

    def _string(self) -> str:
        return self.string if self.string is not None else self.rules.define("v-string", _STRING % TEXT_CHARS)

    def _resolved(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        reference = schema.get("$ref")
        if isinstance(reference, str) and reference.rpartition("/")[2] in self.definitions:
            return self.definitions[reference.rpartition("/")[2]]
        return schema


__all__ = ["TEXT_CHARS", "SchemaValues"]
