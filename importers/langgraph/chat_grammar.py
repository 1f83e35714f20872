"""The grammar of a served chat call's answer, for a run's model that decodes under one (the bundled model).

A served chat call (importers.langgraph.served_model) is answered in PAL's react format. A small model left
free rambles; under this grammar it can only write what the call accepts: calls of the bound tools with
their arguments in their JSON Schema types (`` `$r1 = get_weather(city="Porto")` `` lines, then `yld call`),
or a reply (`Return["..."]` then `yld return`), or, for structured output, `Return[{...}]` with the schema's
fields (an enum's values, a boolean, a number...). The verifier of the answer (`read_chat_answer`) stays the
judge; the grammar only keeps the model to answers it can accept. Written with runtime.local.gbnf, the
helpers the runtime's own turn grammars use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.local.gbnf import RuleSet, alternatives, literal, rule_name

if TYPE_CHECKING:
    from importers.langgraph.served_model import ChatCall, ToolSpec

MAX_CALLS = 1
"""Tool calls one answer may make under the grammar: a small model given room repeats the same call."""
TEXT_CHARS = 600
"""Characters of a reply or a string argument."""
_STRING = '"\\"" [^"\\\\\\n`]{0,%d} "\\""'
_INTEGER = '"-"? ( "0" | [1-9] [0-9]{0,14} )'
_NUMBER = '"-"? ( "0" | [1-9] [0-9]{0,14} ) ( "." [0-9]{1,8} )?'


def chat_grammar(call: ChatCall) -> str:
    """The GBNF grammar of the answers `call` accepts."""
    rules = RuleSet()
    forced = next((tool for tool in call.tools if tool.name == call.forced), None)
    structured = dict(forced.parameters) if forced is not None else call.json_schema
    if structured is not None:
        returned = _Values(rules, structured).rule("reply", structured or {"type": "object"})
        rules.define("root", f'"Return[" {returned} "]\\nyld return"')
        return rules.text()
    options = []
    if call.tools:
        tool_calls = alternatives(_tool_call(rules, index, tool) for index, tool in enumerate(call.tools))
        rules.define("call", f'"`$r" [1-9] " = " {tool_calls} "`"')
        more = f' ( "\\n" call ){{0,{MAX_CALLS - 1}}}' if MAX_CALLS > 1 else ""
        rules.define("calls", f'call{more} "\\nyld call"')
        options.append("calls")
    if not call.must_call:
        text = rules.define("v-string", _STRING % TEXT_CHARS)
        rules.define("reply", f'"Return[" {text} "]\\nyld return"')
        options.append("reply")
    rules.define("root", alternatives(options))
    return rules.text()


def _tool_call(rules: RuleSet, index: int, tool: ToolSpec) -> str:
    """`name(a=..., b=...)` with the tool's required arguments in order (an optional one keeps its default)."""
    values = _Values(rules, tool.parameters)
    properties: Mapping[str, Any] = tool.parameters.get("properties") or {}
    required = [key for key in properties if key in set(tool.parameters.get("required") or ())]
    parts = [
        f"{literal((', ' if position else '') + key + '=')} {values.rule(f't{index}-{key}', properties[key])}"
        for position, key in enumerate(required)
    ]
    body = " ".join([literal(tool.name + "("), *parts, literal(")")])
    return rules.define(rule_name("tool", str(index)), body)


class _Values:
    """Rules of JSON values of a schema (enums, strings, numbers, booleans, arrays, objects, `$ref`s into
    the root schema's `$defs`); an object's required fields only, in order."""

    def __init__(self, rules: RuleSet, root: Mapping[str, Any]) -> None:
        self.rules = rules
        self.definitions: Mapping[str, Any] = root.get("$defs") or root.get("definitions") or {}

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
            return rules.define("v-string", _STRING % TEXT_CHARS)
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
            rules.define("v-string", _STRING % TEXT_CHARS),
            rules.define("v-number", _NUMBER),
            rules.define("v-boolean", '"true" | "false"'),
            rules.define("v-null", '"null"'),
        ]
        return rules.define("v-any", alternatives(scalars))

    def _resolved(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        reference = schema.get("$ref")
        if isinstance(reference, str) and reference.rpartition("/")[2] in self.definitions:
            return self.definitions[reference.rpartition("/")[2]]
        return schema


__all__ = ["chat_grammar"]
