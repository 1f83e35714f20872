"""The grammar of a served chat call's answer, for a run's model that decodes under one (the bundled model).

A served chat call (importers.langgraph.served_model) is answered in PAL's react format. A small model left
free rambles; under this grammar it can only write what the call accepts: calls of the bound tools with
their arguments in their JSON Schema types (`` `$r1 = get_weather(city="Porto")` `` lines, then `yld call`),
or a reply (`Return["..."]` then `yld return`), or, for structured output, `Return[{...}]` with the schema's
fields (an enum's values, a boolean, a number...). The verifier of the answer (`read_chat_answer`) stays the
judge; the grammar only keeps the model to answers it can accept. Written with runtime.local.gbnf and
runtime.local.schema_grammar, as the runtime's own turn grammars are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from runtime.local.gbnf import RuleSet, alternatives, literal, rule_name
from runtime.local.schema_grammar import SchemaValues

if TYPE_CHECKING:
    from importers.langgraph.served_model import ChatCall, ToolSpec

MAX_CALLS = 1
"""Tool calls one answer may make under the grammar: a small model given room repeats the same call."""


def chat_grammar(call: ChatCall) -> str:
    """The GBNF grammar of the answers `call` accepts."""
    rules = RuleSet()
    forced = next((tool for tool in call.tools if tool.name == call.forced), None)
    structured = dict(forced.parameters) if forced is not None else call.json_schema
    if structured is not None:
        returned = SchemaValues(rules, structured).rule("reply", structured or {"type": "object"})
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
        text = SchemaValues(rules, {}).rule("reply", {"type": "string"})
        rules.define("reply", f'"Return[" {text} "]\\nyld return"')
        options.append("reply")
    rules.define("root", alternatives(options))
    return rules.text()


def _tool_call(rules: RuleSet, index: int, tool: ToolSpec) -> str:
    """`name(a=..., b=...)` with the tool's required arguments in order (an optional one keeps its default)."""
    values = SchemaValues(rules, tool.parameters)
    properties: Mapping[str, Any] = tool.parameters.get("properties") or {}
    required = [key for key in properties if key in set(tool.parameters.get("required") or ())]
    parts = [
        f"{literal((', ' if position else '') + key + '=')} {values.rule(f't{index}-{key}', properties[key])}"
        for position, key in enumerate(required)
    ]
    body = " ".join([literal(tool.name + "("), *parts, literal(")")])
    return rules.define(rule_name("tool", str(index)), body)


__all__ = ["chat_grammar"]
