"""The grammar and the example answers of a react round (pal_core.contract.react), for the bundled model.

From the round's description: only the playbook's tools, each with its own parameters in order (keyword
form, required ones always, optional ones optional), values of each parameter's type or a `$variable` that
exists; at most three calls, then `yld call`; or the playbook's value, of its type (the fields of its
`returns_schema` when it has one: runtime.local.schema_grammar), then `yld return` (a round may make calls
first: they run, then the playbook returns); or a question to the user, then `yld user`, when someone can
answer. A tool an earlier round called is not offered again (its result is in the state), and the last
round the budget allows must answer. Every text is bounded, so an answer is at most a few hundred tokens.

    plan – <text>
    `$get_weather = GetWeather(city="Paris")`
    yld call
"""

from __future__ import annotations

import json
import re

from pal_core.contract.react import ReactTurn, Tool
from runtime.local.gbnf import RuleSet, alternatives, char_class, literal, rule_name
from runtime.local.grammar import heard_numbers
from runtime.local.grammar_text import TextRules
from runtime.local.schema_grammar import SchemaValues
from runtime.local.turn_plan import TurnLimits, ValueKind, value_kind

MAX_CALLS = 3
"""Calls in one round."""
DICT_ITEMS = 3
"""Keys of a dict value, and texts of a list in it."""

_NEWLINE = literal("\n")


def result_name(tool: Tool) -> str:
    """The variable a call's result goes into: the tool's name in snake case (`GetWeather` -> `get_weather`)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", tool.name).lower().replace(".", "_")


def build_react_grammar(turn: ReactTurn, *, limits: TurnLimits | None = None) -> str:
    """The GBNF grammar of the round."""
    return _ReactGrammar(turn, limits or TurnLimits()).build()


class _ReactGrammar(TextRules):
    def __init__(self, turn: ReactTurn, limits: TurnLimits) -> None:
        super().__init__(RuleSet(), limits)
        self.turn = turn

    def build(self) -> str:
        turn = self.turn
        endings = [self._answer()]
        calls = self._calls(minimum=1)
        if calls is not None and not turn.final:
            endings.insert(0, f"{calls} {literal('yld call')}")
        if turn.waits_for_user and not turn.final:
            say = literal('`Say("user", ')
            ask = f"{say} {self._say_message()} {literal(')`')} {_NEWLINE}"
            endings.append(f"{ask} {literal('yld user')}")
        self.rules.define("line-char", char_class("", [("\x00", "\x1f")], negated=True))
        plan = self.rules.define("plan-text", f"line-char{{1,{self.limits.note_chars}}}")
        head = f"{literal('plan – ')} {plan} {_NEWLINE}"
        self.rules.define("root", f"{head} {alternatives(endings)}")
        header = f"# PAL react grammar: {turn.agent}.{turn.playbook.name}, round {turn.round}\n"
        return header + self.rules.text()

    def _answer(self) -> str:
        calls = self._calls(minimum=0, most=MAX_CALLS - 1)
        first = f"{calls} " if calls is not None and not self.turn.final else ""
        value = self._returned()
        return f"{first}{literal('Return[')} {value} {literal(']')} {_NEWLINE} {literal('yld return')}"

    def _returned(self) -> str:
        schema = self.turn.playbook.metadata.returns_schema
        if schema is not None:  # a structured reply: the schema's fields, of their types
            string = self._value_of(ValueKind.STRING, self.limits.string_chars)
            options = [SchemaValues(self.rules, schema, string=string).rule("returned-value", schema)]
        else:
            options = [self._value_of(value_kind(self.turn.returns), self.limits.say_chars)]
        options += [literal(f"${name}") for name in self._results()]
        return self.rules.define("returned", alternatives(options))

    def _results(self) -> list[str]:
        """Variables a value may name: results of earlier rounds' calls (and other variables that exist)."""
        return [name for name in self.turn.variables if name not in self.turn.program_variables]

    def _calls(self, *, minimum: int, most: int = MAX_CALLS) -> str | None:
        """`minimum` to `most` call lines, each of a different tool, in the order the tools are listed (the
        verifier refuses the same call twice). A tool an earlier round called has its result in the state:
        the small model, offered it again, calls it again and again; it answers, or calls another."""
        called = {key.split("(", 1)[0] for key in self.turn.called}
        tools = [tool for tool in self.turn.tools.values() if tool.name not in called]
        if not tools or most < 1:
            return None
        lines = [self._call_line(tool) for tool in tools]
        name = f"calls-{minimum}-{most}"
        if name not in self.rules:
            options = [
                " ".join([line, *(f"{later}?" for later in lines[index + 1 : index + most])])
                for index, line in enumerate(lines)
            ]
            body = alternatives(options)
            self.rules.define(name, f"( {body} )?" if minimum == 0 else body)
        return name

    def _call_line(self, tool: Tool) -> str:
        result = result_name(tool)
        target = "" if result in self.turn.program_variables else f"{literal(f'${result} = ')}? "
        body = f"{literal('`')} {target}{self._tool(tool)} {literal('`')} {_NEWLINE}"
        return self.rules.define(rule_name("call", tool.name), body)

    def _tool(self, tool: Tool) -> str:
        pieces = [literal(f"{tool.name}(")]
        first = True
        for parameter in tool.parameters:
            argument = (
                f"{literal(('' if first else ', ') + parameter.name + '=')} {self._argument(parameter.type)}"
            )
            if parameter.required:
                pieces.append(argument)
                first = False
            else:
                pieces.append(f"( {argument} )?")
        pieces.append(literal(")"))
        return self.rules.define(rule_name("tool", tool.name), " ".join(pieces))

    def _argument(self, declared: str | None) -> str:
        kind = value_kind(declared)
        numbers = self._heard(kind)
        options = [numbers] if numbers is not None else [self._value_of(kind, self.limits.string_chars)]
        options += [
            literal(f"${name}")
            for name, value in self.turn.values.items()
            if value is not None and name not in self.turn.program_variables
        ]
        return self.rules.define(rule_name("arg", kind.value), alternatives(options))

    def _heard(self, kind: ValueKind) -> str | None:
        """For a whole number or a number: one of those the round's messages and state hold, when they hold
        any (the member number the user gave, not one the small model makes up)."""
        if kind not in (ValueKind.INTEGER, ValueKind.NUMBER):
            return None
        texts = [
            *self.turn.heard,
            *(json.dumps(value, ensure_ascii=False, default=str) for value in self.turn.values.values()),
        ]
        numbers = [text for text in heard_numbers(texts) if kind is ValueKind.NUMBER or "." not in text]
        if not numbers:
            return None
        return self.rules.define(f"heard-{kind.value}", alternatives(literal(text) for text in numbers))

    def _value_of(self, kind: ValueKind, string_chars: int) -> str:
        """A value of `kind`; a dict may hold lists of scalars (a state update: `{"messages": ["Hi."]}`)."""
        if kind is ValueKind.STRING:
            text = self._value_text(f"string-{string_chars}", string_chars)
            quote = literal('"')
            return self.rules.define(rule_name("v-string", str(string_chars)), f"{quote} {text} {quote}")
        if kind is ValueKind.OBJECT:
            # A round's dict value is an update of texts (`{"messages": ["It is 10:00 in Lisbon."]}`): a few
            # keys, each a text or a few texts, so the answer stays within its token budget.
            text = self._value_of(ValueKind.STRING, self.limits.string_chars)
            more = DICT_ITEMS - 1
            texts = self.rules.define("v-texts", f'"[" {text} ( ", " {text} ){{0,{more}}} "]"')
            entry = self.rules.define(
                "v-text-entry", f"{self._value(ValueKind.STRING)} {literal(': ')} ( {text} | {texts} )"
            )
            return self.rules.define("v-text-object", f'"{{" ( {entry} ( ", " {entry} ){{0,{more}}} )? "}}"')
        return self._value(kind)


def react_examples(turn: ReactTurn) -> str:
    """Two example rounds of the playbook, as a prompt block: one that calls a tool, and the one after it
    that gives the value. Values are stand-ins (`"<city>"`) no answer can copy."""
    blocks: list[str] = []
    tool = next(iter(turn.tools.values()), None)
    if tool is not None:
        arguments = ", ".join(
            f"{parameter.name}={_stand_in(parameter.type, parameter.name)}"
            for parameter in tool.parameters
            if parameter.required
        )
        result = result_name(tool)
        blocks.append(
            "Example 1: a round that needs a tool.\n"
            f"plan – call {tool.name}\n`${result} = {tool.name}({arguments})`\nyld call"
        )
        blocks.append(
            f"Example 2: the next round, after {tool.name} returned.\n"
            f"plan – answer with what {tool.name} returned\n"
            f"Return[{_stand_in(turn.returns, turn.playbook.name + ' value')}]\nyld return"
        )
    else:
        blocks.append(
            "Example 1: a round that answers.\n"
            f"plan – answer\nReturn[{_stand_in(turn.returns, turn.playbook.name + ' value')}]\nyld return"
        )
    return "\n\n".join(blocks)


def _stand_in(declared: str | None, what: str) -> str:
    kind = value_kind(declared)
    if kind is ValueKind.INTEGER:
        return "1"
    if kind is ValueKind.NUMBER:
        return "1.5"
    if kind is ValueKind.BOOLEAN:
        return "true"
    if kind is ValueKind.LIST:
        return json.dumps([f"<{what} item>"])
    if kind is ValueKind.OBJECT:
        return json.dumps({"messages": [f"<{what}>"]})
    return json.dumps(f"<{what}>")
