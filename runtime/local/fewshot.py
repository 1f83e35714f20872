"""Example turns for the prompt, built from the program being run (never a fixed example).

A small model follows a format far better when it has seen it filled in for the very playbook it
runs. `build_example_turns` walks the playbook's flow graph like a turn would (pal_core.flow through
runtime.local.turn_plan) and writes each step the way the turn grammar admits it: the first example
starts the playbook, the second continues after the first one's yield (or, when the first one
finished the playbook, takes another branch from the start).

Values are stand-ins of the right kind (`"<order status>"`, `1`, `true`, ...) unless the program writes a
literal; text stand-ins are in angle brackets, which the turn grammar never lets a model write as a value, so
nothing of an example can be copied into what a model returns. Say messages are what an agent following the
step's instruction would say. Both show the shape of an answer, not its content.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, replace

from pal_core.contract.fixed import choice_list
from pal_core.contract.turn import TurnContext
from pal_core.flow import EdgeKind
from pal_core.ir import ArgKind, Call, JsonValue, Opcode, Step
from pal_core.step_text import TYPED_VARIABLE_RE
from runtime.local.turn_plan import (
    SPEECH,
    TurnLimits,
    TurnPlan,
    ValueKind,
    argument_text,
    program_message,
    returns_value,
    say_target,
    writes_call,
)
from runtime.models.base import ChatMessage

_NUMBERS: dict[ValueKind, JsonValue] = {ValueKind.INTEGER: 1, ValueKind.NUMBER: 1.5, ValueKind.BOOLEAN: True}
"""Stand-ins for values that are not text (a number cannot be told from a real one; text can)."""


def stand_in(kind: ValueKind, what: str) -> JsonValue:
    """The value an example shows for `what` (`order status`): a number of the right kind, or text in angle
    brackets, `"<order status>"`, which the turn grammar never lets a model write as a value (no text value may
    start with `<`), so a stand-in cannot be copied into a real answer."""
    if kind in _NUMBERS:
        return _NUMBERS[kind]
    words = " ".join(what.replace("_", " ").split())[:40] or "value"
    if kind is ValueKind.LIST:
        return [f"<{words} item>"]
    if kind is ValueKind.OBJECT:
        return {"key": f"<{words}>"}
    return f"<{words}>"


_NOT_IN_STRINGS = re.compile(r'["\\`\x00-\x1f]')
_NOT_IN_NOTES = re.compile(r"[`\[\]\x00-\x1f]")
_PLAIN_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,8})?")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExampleTurn:
    """One example: what the runtime asked, and an answer that follows the contract exactly."""

    situation: str
    """What the turn was asked to do, in the words a prompt would use."""
    answer: str
    """The model's answer."""
    context: TurnContext
    """The turn the answer belongs to (its grammar admits the answer)."""
    resume_after: str | None = None
    """The line the example resumes after (None: it starts at the context's current line)."""

    def messages(self) -> tuple[ChatMessage, ChatMessage]:
        """The example as a user/assistant pair of chat messages."""
        return ChatMessage(role="user", content=self.situation), ChatMessage(
            role="assistant", content=self.answer
        )


def build_example_turns(context: TurnContext, *, limits: TurnLimits | None = None) -> tuple[ExampleTurn, ...]:
    """Up to two example turns of the context's playbook (one when the playbook has only one way through a
    turn), from its first line, whatever the current line: examples stay the same for the whole playbook,
    so a prompt's stable prefix can hold them. Raises GrammarError as the grammar generator does."""
    limits = limits or TurnLimits()
    base = replace(context, current_line=context.flow.first)
    first_plan = TurnPlan(base, limits=limits)
    first = _ExampleWriter(first_plan).write(first_plan.entries[0], avoid=None, resumed=False)
    examples = [first]
    last = first.path[-1]
    if first_plan.continuations[last] and first.ending not in ("return", "exit"):
        resumed = replace(base, values={**base.values, **first.values})
        plan = TurnPlan(resumed, limits=limits, resume_after=last)
        examples.append(_ExampleWriter(plan).write(plan.entries[0], avoid=None, resumed=True))
    else:
        other = _ExampleWriter(first_plan).write(first_plan.entries[0], avoid=first.path, resumed=False)
        if other.path != first.path:
            examples.append(other)
    return tuple(example.turn for example in examples)


def render_examples(turns: tuple[ExampleTurn, ...]) -> str:
    """The examples as one prompt block."""
    blocks = [
        f"Example {index}: {turn.situation}\n{turn.answer}" for index, turn in enumerate(turns, start=1)
    ]
    return "\n\n".join(blocks)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Example:
    turn: ExampleTurn
    path: tuple[str, ...]
    """The lines executed."""
    ending: str
    """What followed `yld `."""
    values: dict[str, JsonValue]
    """Variables the example set."""


class _ExampleWriter:
    def __init__(self, plan: TurnPlan) -> None:
        self.plan = plan
        self.limits = plan.limits
        self.values: dict[str, JsonValue] = dict(plan.context.values)
        self.set_here: dict[str, JsonValue] = {}

    def write(self, entry: str, avoid: tuple[str, ...] | None, resumed: bool) -> _Example:
        plan = self.plan
        name = plan.playbook.name
        path = self._path(entry, avoid)
        lines: list[str] = []
        if resumed:
            asked = self._asked_before(self.plan.resume_after or "")
            asked = (*asked, *(variable for variable in plan.needed_first(entry) if variable not in asked))
            situation = f"Continue executing {name} at line {entry}."
            if asked:
                said = ", ".join(f"{variable} is {_json(self._placeholder(variable))}" for variable in asked)
                situation += f" (The reply to line {self.plan.resume_after} says: {said}.)"
            lines.append(
                "recap – "
                + _clip(f"{name} resumed after line {self.plan.resume_after}", self.limits.line_chars)
            )
        else:
            asked = ()
            situation = f"Continue executing {name} at line {entry}."
            lines.append("recap – " + _clip(f"starting {name}", self.limits.line_chars))
        lines.append("plan – " + _clip(f"execute {name} from line {entry}", self.limits.line_chars))
        # What the reply brings: first the variables the first step's call needs (the grammar requires them).
        needed = plan.needed_first(entry)
        leading = (
            *needed,
            *(variable for variable in asked if variable not in needed and variable in plan.writable),
        )
        for variable in leading[: max(self.limits.leading_vars, len(needed))]:
            lines.append(self._var(variable, self._placeholder(variable)))
        if leading:
            lines.append("trig? no")
        ending = ""
        for index, line in enumerate(path):
            following = path[index + 1] if index + 1 < len(path) else None
            lines.extend(self._step_lines(plan.steps[line], following))
            if following is None:
                ending = plan.exit_words(line, plan.budget - index)[0]
                lines.append(f"yld {ending}")
            else:
                lines.append("trig? no")
        turn = ExampleTurn(
            situation=situation,
            answer="\n".join(lines),
            context=plan.context,
            resume_after=plan.resume_after,
        )
        return _Example(turn=turn, path=path, ending=ending, values=dict(self.set_here))

    # The path ------------------------------------------------------------------------------------

    def _path(self, entry: str, avoid: tuple[str, ...] | None) -> tuple[str, ...]:
        """The quickest legal way to the end of a turn. With `avoid`, follow that path until the first
        point where another way is open, take it, then go the quickest way again."""
        plan = self.plan
        path = [entry]
        remaining = plan.budget
        diverged = avoid is None
        while True:
            line = path[-1]
            # Quickest first, but never into a retry loop's body: the small model copies the examples, and
            # an example that retries teaches it to retry forever. sorted() is stable: edge order decides ties.
            choices = sorted(
                plan.next_lines(line, remaining),
                key=lambda target: (self._enters_retry(line, target), plan.distance[target]),
            )
            if not diverged and avoid is not None:
                taken = avoid[len(path)] if len(path) < len(avoid) else None
                others = [target for target in choices if target != taken]
                if others:
                    diverged = True
                    choices = others
                elif taken is None:
                    return tuple(path)
                else:
                    choices = [taken]
            elif self._ends_naturally(line) or not choices:
                return tuple(path)
            path.append(choices[0])
            remaining -= 1

    def _enters_retry(self, line: str, target: str) -> bool:
        """Whether going from `line` to `target` enters the body of a CND that jumps back (a retry loop)."""
        step = self.plan.steps[line]
        if step.opcode != Opcode.CND or not step.children or step.children[0].line != target:
            return False
        return any(
            inner.opcode == Opcode.JMP and inner.jump_target is not None and inner.jump_target <= step.line
            for inner in step.walk()
        )

    def _ends_naturally(self, line: str) -> bool:
        exit_ = self.plan.exits[line]
        return exit_ is not None and bool(exit_.words)

    def _asked_before(self, line: str) -> tuple[str, ...]:
        """Variables the steps up to `line` declare but the turn before did not set: what the reply brings."""
        plan = self.plan
        asked: list[str] = []
        for step in plan.flow.order:
            for name in plan.declared_in(step):
                if name not in self.values and name not in asked:
                    asked.append(name)
            if step.line == line:
                break
        return tuple(asked)

    # Steps ---------------------------------------------------------------------------------------

    def _step_lines(self, step: Step, following: str | None) -> list[str]:
        plan = self.plan
        head = f'`Step["{plan.ref(step.line)}"]`'
        if returns_value(step):
            return [f"{head} {self._return(step)}"]
        if step.call is not None and writes_call(step):
            return [f"{head} `{self._call(step.call)}`"]
        if step.opcode == Opcode.EXE:
            if step.assignment is not None:
                target = step.assignment.target.name
                choices = self._choices(step)
                if choices:
                    return [head, self._var(target, choices[0])]
                return [head, self._var(target, self._assigned(target, step.assignment.expression))]
            produced = plan.declared_in(step)[: self.limits.step_vars]
            return [head] + [self._var(name, self._placeholder(name)) for name in produced]
        if step.opcode == Opcode.QUE:
            target = "meeting" if plan.context.in_meeting else "user"
            return [f'{head} `Say("{target}", {_json(self._message(step.text))})`']
        if step.opcode == Opcode.CND:
            return [f"{head} {self._condition_note(step, following)}"]
        return [head]

    def _return(self, step: Step) -> str:
        plan = self.plan
        kind = plan.return_kind()
        summary = _clip_string(f"<what {plan.playbook.name} did, in one sentence>", self.limits.summary_chars)
        if kind is None or (plan.playbook.returns is None and not step.text.strip()):
            value = "`Return[]`"
        else:
            value = (
                f"`Return[{_json(self._example_of(kind, step.text, f'what {plan.playbook.name} returns'))}]`"
            )
        return f"{value} `Var[$__, {_json(summary)}]`"

    def _call(self, call: Call) -> str:
        result = ""
        if call.result is not None:
            typed = f":{call.result.type}" if call.result.type else ""
            result = f"${call.result.name}{typed} = "
            self._remember(call.result.name, self._placeholder(call.result.name))
        if call.name in SPEECH:
            message = call.arguments[-1] if call.arguments else None
            if message is not None and program_message(call):
                return f"{result}{call.name}({say_target(call)}, {argument_text(message)})"
            text = message.text if message is not None else "Hello"
            return f"{result}{call.name}({say_target(call)}, {_json(self._message(text))})"
        arguments = []
        for argument in call.arguments:
            prefix = f"{argument.name}=" if argument.name else ""
            if argument.kind in (ArgKind.VARIABLE, ArgKind.LITERAL):
                arguments.append(prefix + argument_text(argument))
            elif argument.kind is ArgKind.TEXT:
                arguments.append(prefix + _json(_clip_string(argument.text, self.limits.string_chars)))
            else:  # a Python expression: the answer passes its value
                arguments.append(
                    prefix
                    + _json(self._example_of(ValueKind.ANY, argument.text, argument.name or "argument"))
                )
        return f"{result}{call.name}({', '.join(arguments)})"

    def _condition_note(self, step: Step, following: str | None) -> str:
        """`yes — <condition>` when the body is entered, `no — ...` when it is skipped or the loop ends."""
        entered = any(
            edge.kind is EdgeKind.ENTER and edge.target == following
            for edge in self.plan.flow.edges_from(step.line)
        )
        condition = step.condition.expression if step.condition is not None else step.text
        reason = _clip(_NOT_IN_NOTES.sub("", condition).strip(), self.limits.note_chars) or "as stated"
        return f"{'yes' if entered else 'no'} — {reason}"

    # Values --------------------------------------------------------------------------------------

    def _choices(self, step: Step) -> list[JsonValue] | None:
        source = choice_list(step)
        options = self.values.get(source) if source is not None else None
        return options if isinstance(options, list) and options else None

    def _var(self, name: str, value: JsonValue) -> str:
        self._remember(name, value)
        return f"`Var[${name}, {_json(value)}]`"

    def _remember(self, name: str, value: JsonValue) -> None:
        self.values[name] = value
        self.set_here[name] = value

    def _placeholder(self, name: str) -> JsonValue:
        return stand_in(self.plan.variables.get(name, ValueKind.ANY), name)

    def _assigned(self, name: str, expression: str) -> JsonValue:
        """The literal an assignment writes (`$x:int = 10`), else a stand-in for the variable."""
        kind = self.plan.variables.get(name, ValueKind.ANY)
        value = _literal(expression)
        if value is not None and _fits(value, kind, self.limits):
            return value
        return stand_in(kind, name)

    def _example_of(self, kind: ValueKind, text: str, what: str) -> JsonValue:
        value = _literal(text)
        if value is not None and _fits(value, kind, self.limits):
            return value
        return stand_in(kind, what)

    def _message(self, instruction: str) -> str:
        """A Say message for the example: what an agent following the instruction would say (the small
        model copies example messages, so an instruction copied verbatim would teach it to echo)."""
        message = TYPED_VARIABLE_RE.sub(lambda found: found.group(1).replace("_", " "), instruction).strip()
        return _clip_string(utterance(message) or "Hello!", self.limits.say_chars)


_AUDIENCE = r"(?:the (?:user|visitor|customer|caller|player)s?|them|him|her)"
_UTTERANCES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (rf"^ask {_AUDIENCE} to try again\b.*", "Sorry, that did not work. Could you try again, please?"),
        (rf"^ask {_AUDIENCE} (?:for|about) (?:their|his|her) (.+)", r"Could you tell me your \1, please?"),
        (rf"^ask {_AUDIENCE} (?:for|about) (.+)", r"Could you tell me \1, please?"),
        (rf"^ask {_AUDIENCE} (?:what|which|how|whether|if|when|where|who) (.+)", r"Could you tell me \1?"),
        (r"^ask (?:for|about) (.+)", r"Could you tell me \1, please?"),
        (rf"^greet {_AUDIENCE} by name\b.*", "Hello, nice to meet you!"),
        (r"^introduce yourself as (?:the |a |an )?(.+)", r"Hello, I am the \1."),
        (r"^introduce yourself\b.*", "Hello, let me introduce myself."),
        (r"^(?:say goodbye|wish .* goodbye)\b.*", "Goodbye, and have a good day!"),
        (r"^wish (?:them|the user) (.+)", r"I wish you \1."),
        (rf"^(?:tell|show|give) {_AUDIENCE} (?:their|his|her) (.+)", r"Here is your \1."),
        (rf"^(?:tell|inform|show|explain to|remind) {_AUDIENCE} (?:that )?(.+)", r"\1."),
        (r"^(?:tell|explain|say)(?: in one sentence| briefly)? (?:that )?(.+)", r"\1."),
        (r"^thank (?:the user|them)\b.*", "Thank you!"),
    )
)
_GREETING = re.compile(
    rf"^greet {_AUDIENCE}(?:\s+(?:warmly|politely|kindly))?(?:\s+(?:with [^,]+?))?(?:\s+and\s+(.+))?$",
    re.IGNORECASE,
)
_PRONOUNS = ((r"\btheir\b", "your"), (r"\bthey\b", "you"), (r"\bthem\b", "you"))


def utterance(instruction: str) -> str:
    """An instruction to speak (`Ask the user for their name`) as a message (`Could you tell me your
    name, please?`); other actions are announced (`Let me look up order status.`)."""
    text = instruction.strip().rstrip(".")
    greeting = _GREETING.match(text)
    if greeting:
        rest = greeting.group(1)
        return "Hello!" + (f" {utterance(rest)}" if rest else "")
    for pattern, replacement in _UTTERANCES:
        if pattern.match(text):
            spoken = pattern.sub(replacement, text, count=1).strip()
            for pronoun, second_person in _PRONOUNS:
                spoken = re.sub(pronoun, second_person, spoken, flags=re.IGNORECASE)
            return spoken[:1].upper() + spoken[1:]
    # Any other instruction is an action the agent announces: "Look up order status" -> "Let me look up ...".
    return f"Let me {text[:1].lower()}{text[1:]}." if text else ""


def _literal(text: str) -> JsonValue | None:
    """The value of a Python literal (None when `text` is not one, or is `None`)."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (str, int, float, bool, list, dict)) else None


def _fits(value: JsonValue, kind: ValueKind, limits: TurnLimits) -> bool:
    """Whether the grammar admits `value` as a value of `kind` (shape, simple strings, sizes)."""
    if kind is ValueKind.LIST or (kind is ValueKind.ANY and isinstance(value, list)):
        return (
            isinstance(value, list)
            and len(value) <= limits.list_items
            and all(
                _fits(item, ValueKind.ANY, limits) and not isinstance(item, (list, dict)) for item in value
            )
        )
    if kind is ValueKind.OBJECT or (kind is ValueKind.ANY and isinstance(value, dict)):
        return (
            isinstance(value, dict)
            and len(value) <= limits.list_items
            and all(
                _fits(key, ValueKind.STRING, limits)
                and _fits(item, ValueKind.ANY, limits)
                and not isinstance(item, (list, dict))
                for key, item in value.items()
            )
        )
    if isinstance(value, bool):
        return kind in (ValueKind.BOOLEAN, ValueKind.ANY)
    if isinstance(value, (int, float)):
        number_kinds = (ValueKind.NUMBER, ValueKind.ANY) + (
            (ValueKind.INTEGER,) if isinstance(value, int) else ()
        )
        return kind in number_kinds and _PLAIN_NUMBER.fullmatch(_json(value)) is not None
    if isinstance(value, str):
        return (
            kind in (ValueKind.STRING, ValueKind.ANY)
            and len(value) <= limits.string_chars
            and not _NOT_IN_STRINGS.search(value)
        )
    return value is None and kind is ValueKind.ANY


def _json(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip()


def _clip_string(text: str, limit: int) -> str:
    """Text made fit for a grammar string: no quotes, backslashes, backticks or control characters."""
    return _clip(_NOT_IN_STRINGS.sub("", text).strip(), limit)


__all__ = ["ExampleTurn", "build_example_turns", "render_examples"]
