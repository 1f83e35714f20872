"""Grammar rules for the text and values every turn grammar writes (runtime.local.grammar for numbered
steps, runtime.local.react_grammar for react rounds): bounded strings that never start a stand-in, numbers,
JSON values of a kind, notes and reasons that cannot read as a yield."""

from __future__ import annotations

from runtime.local.gbnf import RuleSet, char_class, literal, rule_name
from runtime.local.turn_plan import TurnLimits, ValueKind

_CONTROL = [("\x00", "\x1f")]
_QUOTE = literal('"')
_NOTE_OPENERS_EXCLUDED = "yY"  # a note starting with `yld` would read as the turn's yield


class TextRules:
    """Defines, on first use, the rules of the texts and values of a turn in `rules`, within `limits`."""

    def __init__(self, rules: RuleSet, limits: TurnLimits) -> None:
        self.rules = rules
        self.limits = limits

    def _chars(self, name: str, maximum: int, minimum: int = 0) -> str:
        """`maximum` characters of a double-quoted string's inside (no quote, backslash, backtick)."""
        self.rules.define("str-char", char_class('"\\`', _CONTROL, negated=True))
        return self.rules.define(rule_name(name, "text"), f"str-char{{{minimum},{maximum}}}")

    def _value_text(self, name: str, maximum: int) -> str:
        """The inside of a string value the model writes into a variable, a return or its summary: like
        `_chars`, but never starting with `<`. The example turns show values as stand-ins such as
        `"<order status>"`; a model that copied one would return made-up text, so no answer can."""
        self.rules.define("str-char", char_class('"\\`', _CONTROL, negated=True))
        self.rules.define("value-first-char", char_class('"\\`<', _CONTROL, negated=True))
        body = f"( value-first-char str-char{{0,{maximum - 1}}} )?"
        return self.rules.define(rule_name(name, "text"), body)

    def _say_message(self) -> str:
        text = self._chars("say", self.limits.say_chars, minimum=1)
        return self.rules.define("say-message", f"{_QUOTE} {text} {_QUOTE}")

    def _line_text(self) -> str:
        self.rules.define("line-char", char_class("", _CONTROL, negated=True))
        return self.rules.define("line-text", f"line-char{{1,{self.limits.line_chars}}}")

    def _note(self) -> str:
        first = char_class(" `[]" + _NOTE_OPENERS_EXCLUDED, _CONTROL, negated=True)
        self.rules.define("note-char", char_class("`[]", _CONTROL, negated=True))
        return self.rules.define("note", f"{first} note-char{{0,{self.limits.note_chars - 1}}}")

    def _reason(self) -> str:
        """The reason after a CND's `yes — ` / `no — `: any first character (nothing there reads as `yld`)."""
        first = char_class(" `[]", _CONTROL, negated=True)
        self.rules.define("note-char", char_class("`[]", _CONTROL, negated=True))
        return self.rules.define("reason", f"{first} note-char{{0,{self.limits.note_chars - 1}}}")

    def _value(self, kind: ValueKind) -> str:
        """The rule for a JSON value of `kind`, defining it (and what it uses) on first use."""
        rules = self.rules
        limits = self.limits
        if kind is ValueKind.STRING:
            text = self._value_text("string", limits.string_chars)
            return rules.define("v-string", f"{_QUOTE} {text} {_QUOTE}")
        if kind is ValueKind.INTEGER:
            return rules.define("v-integer", '"0" | "-"? [1-9] [0-9]{0,14}')
        if kind is ValueKind.NUMBER:
            return rules.define("v-number", '"-"? ( "0" | [1-9] [0-9]{0,14} ) ( "." [0-9]{1,8} )?')
        if kind is ValueKind.BOOLEAN:
            return rules.define("v-boolean", '"true" | "false"')
        scalar = rules.define(
            "v-scalar",
            f"{self._value(ValueKind.STRING)} | {self._value(ValueKind.NUMBER)} | "
            f'{self._value(ValueKind.BOOLEAN)} | "null"',
        )
        more = limits.list_items - 1
        if kind is ValueKind.LIST:
            return rules.define("v-list", f'"[" ( {scalar} ( ", " {scalar} ){{0,{more}}} )? "]"')
        if kind is ValueKind.OBJECT:
            entry = rules.define("v-entry", f'{self._value(ValueKind.STRING)} ": " {scalar}')
            return rules.define("v-object", f'"{{" ( {entry} ( ", " {entry} ){{0,{more}}} )? "}}"')
        lists = self._value(ValueKind.LIST)
        objects = self._value(ValueKind.OBJECT)
        return rules.define("v-any", f"{scalar} | {lists} | {objects}")
