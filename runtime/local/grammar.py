"""The GBNF grammar of one model turn, derived from the running program.

The grammar admits only the canonical contract (a subset of what `pal_core.contract.parse_answer`
reads) and only legal paths from the current line:

    recap – <text>
    plan – <text>
    `Var[$name, <value>]`                       (0-3 lines: what the user just said, say)
    trig? no                                    (after those Var lines)
    `Step["PB:01:QUE"]` `Say("user", "<text>")`
    trig? no
    `Step["PB:02:QUE"]` `$x:float = Y($num)`    (a step's call exactly as the program writes it)
    trig? no
    `Step["PB:03:EXE"]`
    `Var[$x, <value of $x's type>]`
    trig? no
    `Step["PB:04:CND"]` <short reason>
    trig? no
    `Step["PB:04.01:RET"]` `Return[<value>]` `Var[$__, "<summary>"]`
    yld return

Steps follow the flow graph (pal_core.flow) edge by edge, at most `TurnPlan.budget` of them; the
final `yld` is the one the last step calls for (its YLD target; `return` after RET or where the
playbook can end; `call` after a queued call, or to pause when the step budget is spent). A `trig?`
line may name a real trigger, which ends the turn with `yld call`. Every free text has a length cap.

A number the turn gives a new variable, when the messages the turn brings hold numbers, is one of those
numbers (`heard`): "ask for the order number, then look it up" must look up the number the user wrote.
A 135M model left free copies the number of the example turn, or writes `1`. The verifier still checks
everything: the grammar makes violations rare, the verifier makes them harmless.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from pal_core.contract.fixed import choice_list
from pal_core.contract.turn import TurnContext
from pal_core.flow import END, EdgeKind
from pal_core.ir import ArgKind, Call, Opcode, Step
from runtime.local.gbnf import RuleSet, alternatives, literal, rule_name
from runtime.local.grammar_text import TextRules
from runtime.local.turn_plan import (
    SPEECH,
    Callee,
    TurnLimits,
    TurnPlan,
    ValueKind,
    argument_text,
    program_message,
    returns_value,
    say_target,
    writes_call,
)

_CONTROL = [("\x00", "\x1f")]
_NEWLINE = literal("\n")
_QUOTE = literal('"')
_TRIG_NO = literal("trig? no\n")
_SAY_TO_USER = literal(' `Say("user", ')
_NOTE_OPENERS_EXCLUDED = "yY"  # a note starting with `yld` would read as the turn's yield


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnGrammar:
    """A turn's grammar and what it was built for."""

    text: str
    """The GBNF source, `root` first."""
    entries: tuple[str, ...]
    """Lines the turn may start at."""
    max_steps: int
    """The most steps the grammar admits in one turn."""
    rule_count: int
    """Number of rules (a size measure)."""


def build_turn_grammar(
    context: TurnContext,
    *,
    limits: TurnLimits | None = None,
    resume_after: str | None = None,
    heard: Iterable[str] = (),
) -> TurnGrammar:
    """The GBNF grammar of the next turn at the context's current line (or after `resume_after`).
    `heard` are the texts of the messages the turn brings (the user's reply, say): a number the turn gives
    a new variable is one of the numbers they hold, when they hold any. Raises GrammarError when the
    playbook cannot run turn by turn, or the turn would start on a step no answer can end."""
    plan = TurnPlan(context, limits=limits, resume_after=resume_after)
    builder = _GrammarBuilder(plan, heard_numbers(heard))
    text = builder.build()
    return TurnGrammar(text=text, entries=plan.entries, max_steps=plan.budget, rule_count=len(builder.rules))


class _GrammarBuilder(TextRules):
    def __init__(self, plan: TurnPlan, heard: tuple[str, ...] = ()) -> None:
        super().__init__(RuleSet(), plan.limits)
        self.plan = plan
        self.heard = heard
        """Numbers in the messages the turn brings, as JSON text."""

    # The turn -------------------------------------------------------------------------------------

    def build(self) -> str:
        plan = self.plan
        lead = self._leading_vars()
        opening: list[str] = []
        for line in plan.entries:
            state = self._state(line, plan.budget)
            needed = plan.needed_first(line)
            if needed:
                # The first step's call passes variables that do not exist yet (`Forecast(city=$city)` after
                # asking the user): the answer must set them first, from what it was told.
                required = " ".join(
                    self._var_line(name, plan.variables.get(name, ValueKind.ANY)) for name in needed
                )
                more = f"{lead}?" if lead is not None else ""
                opening.append(f"{required} {more} {_TRIG_NO} {state}")
                continue
            opening.append(state)
            if lead is not None:
                # No trigger may end the turn here: the verifier wants at least one step executed.
                opening.append(f"{lead} {_TRIG_NO} {state}")
        line_text = self._line_text()
        recap, plan_head = literal("recap – "), literal("\nplan – ")
        root = f"{recap} {line_text} {plan_head} {line_text} {_NEWLINE} {alternatives(opening)}"
        self.rules.define("root", root)
        header = (
            f"# PAL turn grammar: {plan.context.agent}.{plan.playbook.name} from line "
            f"{' or '.join(plan.entries)}, at most {plan.budget} steps\n"
        )
        return header + self.rules.text()

    def _state(self, line: str, remaining: int) -> str:
        """The rule for "execute `line` with `remaining` steps left (it included), then end or go on"."""
        plan = self.plan
        exit_ = plan.exits[line]
        mandatory = exit_ is not None and exit_.mandatory
        name = rule_name("fin", line) if mandatory else rule_name("st", line, str(remaining))
        if name in self.rules:
            return name
        ends = [literal(f"yld {word}") for word in plan.exit_words(line, remaining)]
        if not mandatory:
            fired = self._fired()
            if fired is not None:
                ends.append(fired)
        following = plan.next_lines(line, remaining)
        step = plan.steps[line]
        if step.opcode == Opcode.CND and step.children:
            # The answer states the outcome (`yes — reason` / `no — reason`) and the path must follow it.
            edges = plan.flow.edges_from(line)
            entered = {edge.target for edge in edges if edge.kind is EdgeKind.ENTER}
            leaves = any(edge.target == END for edge in edges if edge.kind is not EdgeKind.ENTER)
            words = plan.exit_words(line, remaining)
            outcomes = []
            for word, targets in (
                ("yes", [target for target in following if target in entered]),
                ("no", [target for target in following if target not in entered]),
            ):
                # `yld return` only where this outcome leaves the playbook.
                tails = [
                    literal(f"yld {ending}")
                    for ending in words
                    if ending != "return" or (word == "no" and leaves)
                ]
                if not mandatory and self._fired() is not None:
                    tails.append(self._fired())
                if not targets and not tails:
                    continue
                if targets:
                    nexts = alternatives(self._state(target, remaining - 1) for target in targets)
                    tails.append(f"{_TRIG_NO} {nexts}")
                head = literal(f'`Step["{plan.ref(line)}"]` {word} — ')
                outcomes.append(f"{head} {self._reason()} {_NEWLINE} {alternatives(tails)}")
            return self.rules.define(name, alternatives(outcomes))
        tails = list(ends)
        if following:
            # Loops revisit a line only with fewer steps left, so this recursion always ends.
            nexts = alternatives(self._state(target, remaining - 1) for target in following)
            tails.append(f"{_TRIG_NO} {nexts}")
        return self.rules.define(name, f"{self._step(line)} {alternatives(tails)}")

    def _fired(self) -> str | None:
        """`trig? `Trigger["PB:T1:CND"]`` then `yld call`: the runtime runs the triggered playbook."""
        triggers = self.plan.triggers
        if not triggers:
            return None
        refs = alternatives(literal(f'`Trigger["{ref}"]`') for ref in triggers)
        end = literal("\nyld call")
        return self.rules.define("fired", f"{literal('trig? ')} {refs} {end}")

    def _leading_vars(self) -> str | None:
        variables = self.plan.variables
        writable = self.plan.writable
        if not writable:
            return None
        options = [f"{literal(f'${name}, ')} {self._new_value(name, variables[name])}" for name in writable]
        close = literal("]`\n")
        self.rules.define("lead-var", f"{literal('`Var[')} {alternatives(options)} {close}")
        return f"lead-var{{1,{self.limits.leading_vars}}}"

    # One step -------------------------------------------------------------------------------------

    def _step(self, line: str) -> str:
        name = rule_name("step", line)
        if name in self.rules:
            return name
        step = self.plan.steps[line]
        ref = literal(f'`Step["{self.plan.ref(line)}"]`')
        inline, after = self._content(step)
        parts = [ref]
        if inline:
            parts.append(inline)
        parts.append(_NEWLINE)
        if after:
            parts.append(after)
        return self.rules.define(name, " ".join(parts))

    def _content(self, step: Step) -> tuple[str, str]:
        """What follows the step's reference on its line, and the lines after it."""
        if returns_value(step):
            return self._return(step), ""
        if step.call is not None and writes_call(step):
            return f"{literal(' `')} {self._call(step.call)} {literal('`')}", ""
        if step.opcode == Opcode.EXE:
            if step.assignment is not None:
                name = step.assignment.target.name
                choices = self._choices(step)
                if choices is not None:
                    close = literal("]`\n")
                    return "", f"{literal(f'`Var[${name}, ')} {choices} {close}"
                kind = self.plan.variables.get(name, ValueKind.ANY)
                return "", self._var_line(name, kind)
            names = self.plan.mentioned(step)
            note = f"( {literal(' ')} {self._note()} )?"
            if not names:
                return note, ""
            options = [self._var_line(name, self.plan.variables.get(name, ValueKind.ANY)) for name in names]
            lines = self.rules.define(rule_name("vars", step.line), alternatives(options))
            return note, f"{lines}{{0,{min(len(names), self.limits.step_vars)}}}"
        if step.opcode == Opcode.QUE:
            # A QUE step in words queues something: a message to the user, or a call to a known callee.
            options = [f"{target} {self._say_message()} {literal(')`')}" for target in self._say_targets()]
            free = self._free_call()
            if free is not None:
                options.append(f"{literal(' `')} {free} {literal('`')}")
            return alternatives(options), ""
        if step.opcode == Opcode.CND:
            return f"{literal(' ')} {self._note()}", ""
        if step.opcode in (Opcode.TNK, Opcode.CHK):
            return f"( {literal(' ')} {self._note()} )?", ""
        return "", ""

    def _say_targets(self) -> list[str]:
        """Whom a step in words speaks to: the user; in a meeting, the meeting, or its participants by name."""
        context = self.plan.context
        if not context.in_meeting:
            return [_SAY_TO_USER]
        targets = [literal(' `Say("meeting", ')]
        targets += [
            literal(f' `Say("meeting @{name}", ')
            for name in context.participants
            if name not in (context.agent,)
        ]
        return targets

    def _choices(self, step: Step) -> str | None:
        """The values a step that chooses from a list the program holds may give (`$choice = ... one of
        $candidates ...`): exactly the list's items, when the turn knows them."""
        source = choice_list(step)
        options = self.plan.context.values.get(source) if source is not None else None
        if not isinstance(options, list) or not options:
            return None
        texts = []
        for option in options:
            try:
                texts.append(json.dumps(option, ensure_ascii=False))
            except (TypeError, ValueError):
                return None
        return self.rules.define(
            rule_name("choice", step.line), alternatives(literal(text) for text in texts)
        )

    def _return(self, step: Step) -> str:
        plan = self.plan
        kind = plan.return_kind()
        if kind is None or (plan.playbook.returns is None and not step.text.strip()):
            value = literal(" `Return[]`")
        else:
            value = f"{literal(' `Return[')} {self._value(kind)} {literal(']`')}"
        opening, closing = literal(' `Var[$__, "'), literal('"]`')
        return f"{value} {opening} {self._value_text('summary', self.limits.summary_chars)} {closing}"

    def _var_line(self, name: str, kind: ValueKind) -> str:
        close = literal("]`\n")
        return f"{literal(f'`Var[${name}, ')} {self._new_value(name, kind)} {close}"

    def _new_value(self, name: str, kind: ValueKind) -> str:
        """The value a Var line may give `name`: for a number the turn introduces, one the messages it
        brings hold (when they hold any of that kind); otherwise any value of its kind."""
        if name not in self.plan.context.values and kind in (ValueKind.INTEGER, ValueKind.NUMBER):
            numbers = [text for text in self.heard if kind is ValueKind.NUMBER or "." not in text]
            if numbers:
                return self.rules.define(
                    f"heard-{kind.value}", alternatives(literal(text) for text in numbers)
                )
        return self._value(kind)

    # Calls ----------------------------------------------------------------------------------------

    def _call(self, call: Call) -> str:
        """The call as the program writes it. Natural-language arguments become free strings and Python
        expressions become values (the verifier takes only literals and `$variables`)."""
        parts: list[str] = []
        if call.result is not None:
            typed = f":{call.result.type}" if call.result.type else ""
            parts.append(literal(f"${call.result.name}{typed} = "))
        if call.name in SPEECH:
            target = say_target(call)
            message = call.arguments[-1] if call.arguments else None
            if message is not None and program_message(call):
                # The program's own message (the runtime says it as written).
                said = literal(f"{call.name}({target}, {argument_text(message)})")
                parts.append(said)
                return " ".join(parts)
            context = self.plan.context
            targets = [target]
            if context.in_meeting and target == '"meeting"':
                # In a meeting the message may give named participants the turn (`meeting @Chef`).
                targets += [f'"meeting @{name}"' for name in context.participants if name != context.agent]
            opening = alternatives(literal(f"{call.name}({option}, ") for option in targets)
            parts.append(f"{opening} {self._say_message()} {literal(')')}")
            return " ".join(parts)
        pieces: list[str] = [literal(f"{call.name}(")]
        for index, argument in enumerate(call.arguments):
            prefix = (", " if index else "") + (f"{argument.name}=" if argument.name else "")
            if argument.kind in (ArgKind.VARIABLE, ArgKind.LITERAL):
                pieces.append(literal(prefix + argument_text(argument)))
                continue
            if prefix:
                pieces.append(literal(prefix))
            kind = ValueKind.STRING if argument.kind is ArgKind.TEXT else ValueKind.ANY
            pieces.append(self._value(kind))
        pieces.append(literal(")"))
        parts.append(" ".join(pieces))
        return " ".join(parts)

    def _free_call(self) -> str | None:
        """A call to a known callee, for a QUE step that names none: `[$x = ]Name($a, "b")`."""
        callees: tuple[Callee, ...] = self.plan.callees
        if not callees:
            return None
        argument = self._argument()
        options = []
        for callee in callees:
            count = len(callee.parameters)
            if count:
                more = f"( {literal(', ')} {argument} ){{0,{count - 1}}}" if count > 1 else ""
                args = f"( {argument} {more} )?"
                options.append(f"{literal(callee.name + '(')} {args} {literal(')')}")
            else:
                options.append(literal(callee.name + "()"))
        names = list(self.plan.writable)
        call = self.rules.define("free-call", alternatives(options))
        if not names:
            return call
        target = alternatives(literal(f"${name} = ") for name in names)
        return f"{target}? {call}"

    def _argument(self) -> str:
        options = [
            self._value(ValueKind.STRING),
            self._value(ValueKind.NUMBER),
            self._value(ValueKind.BOOLEAN),
        ]
        options.extend(literal(f"${name}") for name in self.plan.existing)
        return self.rules.define("argument", alternatives(options))


_NUMBER_IN_TEXT = re.compile(r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d{1,15})(?:\.\d{1,8})?(?!\w)(?![.,]\d)")
_HEARD_LIMIT = 16


def heard_numbers(texts: Iterable[str]) -> tuple[str, ...]:
    """The numbers written in `texts`, as JSON numbers (`2718`, `-3`, `1.5`; `007` -> `7`), first
    occurrence first, at most 16. `1,000` is a thousand; digits inside words (`A12`, `2nd`, `v1.2.3`) are
    not numbers."""
    found: list[str] = []
    for text in texts:
        for match in _NUMBER_IN_TEXT.finditer(text):
            number = match.group().replace(",", "")
            value = repr(float(number)) if "." in number else str(int(number))
            if value not in found:
                found.append(value)
    return tuple(found[:_HEARD_LIMIT])


def trigger_check_grammar(triggers: tuple[str, ...]) -> str:
    """The GBNF grammar of a trigger check (RequestKind.TRIGGERS): `trig? no`, or one of `triggers`
    (`Playbook:T1:CND`) fired, then `yld call`."""
    options = [literal("trig? no"), *(literal(f'trig? `Trigger["{ref}"]`') for ref in triggers)]
    return f"root ::= {alternatives(options)} {literal(chr(10) + 'yld call')}\n"
