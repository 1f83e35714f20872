"""Benign forms real models write, rewritten into the contract before an answer is verified.

Each repair changes how an answer is written, never what it does: the verifier then checks the repaired
answer with every rule. Each one is reported (`Repair`), so traces and `pal check-turn` show what was
rewritten ("repaired: R06 ..."). Codes are stable (docs/contract.md):

  R01 a reference without its code (`Step["Main:01"]`, `Trigger["Main:T1"]`), or a trigger with another code
      than its own (`Playbook:T1` names one trigger): filled from the program
  R02 the call forms `Return(x)` / `Yld(user)` for `Return[x]` / `yld user`
  R03 a `yld` written before the first executed step (the model thinking aloud): dropped
  R04 a step restated from the previous turn (the yield it stopped at, no calls): not executed again; also
      the current line written bare, ending the turn, with more steps after it
  R05 a `Say(...)` written just before the step it belongs to: moved onto that step
  R06 a RET (or a return at the end) without `Var[$__, summary]`: the runtime writes the summary
  R07 a RET not followed by `yld return` (no yld, or `yld call`), or a `Return[...]` where the playbook
      ends with no final yld: `yld return`
  R08 `yld finished` / `yld done` / `yld end`: the yield the last step calls for where the playbook ends
  R09 a yld naming an agent or player (`yld for Player1`): `yld meeting` in a meeting, `yld agent X` for an
      agent of the program
  R10 a final yld that a YLD step right after the last written step calls for (only lines that may stay
      unwritten between them): that YLD step is taken as executed; likewise a `Return[...]` with no yld
      where the next line that does work is a RET: that RET
  R11 `yld return` after a `YLD call` step that ends the playbook: the step yields, then the playbook returns
  R14 a number, boolean, list or dict set into a variable declared `str`: stored as its text (JSON)
  R15 a Step naming a trigger the answer reports fired (`Step["TooBig:T1"]` after
      `trig? Trigger["TooBig:T1:CND"]`): the trigger restated, not a step
  R13 the call a fired trigger makes, written on the line after `trig?`: attached to the trigger
  R18 the turn ends at a step whose yield the program fixes (a YLD, a RET, an inline `; YLD for ...`) with
      another yld (`yld call` at `YLD for exit`): the step's own yield (not at a conversation step, not
      `yld meeting` in a meeting, not `yld return`/`exit` after an inline yield: docs/contract.md)
  R17 a call written on a CND line that is the call of its body's first step, not written (`Step["Main:04:CND"]`
      `Respond($message)` over `04.01:QUE Respond($message)`): the CND entered, the call moved onto that step
  R12 the last step written bare just before `yld call` although its work is a call the model must write
      (`Step["Main:07:QUE"] yld for call` after firing a trigger): the turn stops before that step (a turn
      that fires a trigger may execute no step: the trigger runs, then execution goes on at that step)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract.model import (
    Answer,
    ReturnAction,
    StepAction,
    StepRef,
    TriggerAction,
    VarAction,
    YieldAction,
)
from pal_core.contract.parse import AnswerAction, StrayCallAction
from pal_core.contract.turn import TurnContext
from pal_core.flow import END
from pal_core.ir import ArgKind, Call, Opcode, Step, YieldKind, YieldTarget
from pal_core.step_text import parse_yield_target


@dataclass(frozen=True, slots=True, kw_only=True)
class Repair:
    """One rewrite applied to an answer before it was verified."""

    code: str
    """`R01`..`R18` (R16 is reserved for the values a program fixes, issue 28)."""
    message: str
    """What was rewritten, in words."""
    answer_line: int | None = None
    """The line of the answer, when known."""

    def format(self) -> str:
        where = f"answer line {self.answer_line}: " if self.answer_line else ""
        return f"{self.code} {where}{self.message}"


_FINISHED_WORDS = frozenset({"finished", "finish", "done", "end", "ended", "complete", "completed"})
_YIELD_KEYWORDS = frozenset({"user", "human", "call", "return", "exit", "meeting", "agent"})


def repair(answer: Answer, context: TurnContext) -> tuple[Answer, tuple[Repair, ...]]:
    """The answer with every benign form rewritten, and what was rewritten (in answer order)."""
    fixer = _Repairer(answer, context)
    actions = fixer.run()
    if not fixer.repairs:
        return answer, ()
    return replace(answer, actions=tuple(actions)), tuple(fixer.repairs)


def _line(action: object) -> int | None:
    span = getattr(action, "span", None)
    return span.line if span is not None else None


class _Repairer:
    def __init__(self, answer: Answer, context: TurnContext) -> None:
        self.answer = answer
        self.context = context
        self.flow = context.flow
        self.repairs: list[Repair] = []

    def note(self, code: str, message: str, action: object = None) -> None:
        self.repairs.append(Repair(code=code, message=message, answer_line=_line(action)))

    def run(self) -> list[AnswerAction]:
        actions: list[AnswerAction] = list(self.answer.actions)
        actions = self._trigger_steps(actions)
        actions = self._fill_codes(actions)
        actions = self._call_forms(actions)
        actions = self._restated_start(actions)
        actions = self._early_yields(actions)
        actions = self._trigger_calls(actions)
        actions = self._say_before_step(actions)
        actions = self._call_on_decision(actions)
        actions = self._bare_last_step(actions)
        actions = self._yield_words(actions)
        actions = self._program_yield(actions)
        actions = self._implied_yield_step(actions)
        actions = self._implied_return_step(actions)
        actions = self._return_end(actions)
        actions = self._text_values(actions)
        return actions

    # --- R14 -------------------------------------------------------------------------------------

    def _text_values(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        result: list[AnswerAction] = []
        for action in actions:
            if isinstance(action, VarAction) and action.literal and action.value is not None:
                declared = self.context.declared_types.get(action.name) or action.type
                if (
                    declared is not None
                    and declared.split("[", 1)[0].strip() == "str"
                    and not isinstance(action.value, str)
                ):
                    text = json.dumps(action.value, ensure_ascii=False)
                    self.note(
                        "R14",
                        f"${action.name} is declared str: {action.raw} stored as the text {text!r}",
                        action,
                    )
                    action = replace(action, value=text)
            result.append(action)
        return result

    # --- R15 -------------------------------------------------------------------------------------

    def _trigger_steps(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        result: list[AnswerAction] = []
        fired: set[tuple[str, str]] = set()
        for action in actions:
            if isinstance(action, TriggerAction):
                fired.update((ref.playbook, ref.line) for ref in action.fired)
            if (
                isinstance(action, StepAction)
                and action.ref.line.startswith("T")
                and (action.ref.playbook, action.ref.line) in fired
                and not action.calls
            ):
                self.note("R15", f'Step["{action.ref}"] restates the trigger fired above; not a step', action)
                continue
            result.append(action)
        return result

    # --- R01 -------------------------------------------------------------------------------------

    def _fill_codes(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        result: list[AnswerAction] = []
        name = self.context.playbook.name
        for action in actions:
            if isinstance(action, StepAction) and not action.ref.code:
                step = self.flow.by_line.get(action.ref.line) if action.ref.playbook == name else None
                if step is not None:
                    ref = replace(action.ref, code=step.opcode)
                    self.note(
                        "R01",
                        f'Step["{action.ref.playbook}:{action.ref.line}"] read as Step["{ref}"]',
                        action,
                    )
                    action = replace(action, ref=ref)
            elif isinstance(action, TriggerAction) and any(
                str(ref) not in self.context.triggers for ref in action.fired
            ):
                fired = tuple(self._trigger_code(ref, action) for ref in action.fired)
                action = replace(action, fired=fired)
            result.append(action)
        return result

    def _trigger_code(self, ref: StepRef, action: TriggerAction) -> StepRef:
        """`Playbook:T1` names one trigger: a missing or different code after it is filled from the program."""
        if str(ref) in self.context.triggers:
            return ref
        for info in self.context.triggers.values():
            if info.ref.playbook == ref.playbook and info.ref.line == ref.line:
                self.note(
                    "R01", f'Trigger["{ref}"] read as Trigger["{info.ref}"] (its code in the program)', action
                )
                return info.ref
        return ref

    # --- R02 -------------------------------------------------------------------------------------

    def _call_forms(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        result: list[AnswerAction] = []
        for action in actions:
            if isinstance(action, StepAction) and any(
                call.name in ("Return", "Yld") for call in action.calls
            ):
                kept = tuple(call for call in action.calls if call.name not in ("Return", "Yld"))
                result.append(replace(action, calls=kept))
                result.extend(
                    self._form(call, action) for call in action.calls if call.name in ("Return", "Yld")
                )
                continue
            if isinstance(action, StrayCallAction) and action.call.name in ("Return", "Yld"):
                result.append(self._form(action.call, action))
                continue
            result.append(action)
        return result

    def _form(self, call: Call, action: object) -> ReturnAction | YieldAction:
        span = getattr(action, "span", None)
        argument = call.arguments[0] if call.arguments else None
        if call.name == "Yld":
            word = str(argument.value) if argument is not None and argument.value is not None else ""
            self.note("R02", f"Yld({word}) read as yld {word}", action)
            return YieldAction(target=parse_yield_target(word), span=span)
        if argument is None:
            self.note("R02", "Return() read as Return[]", action)
            return ReturnAction(span=span)
        raw = f"${argument.value}" if argument.kind is ArgKind.VARIABLE else argument.text
        value = argument.value if argument.kind is ArgKind.LITERAL else raw
        self.note("R02", f"Return({argument.text}) read as Return[{raw}]", action)
        return ReturnAction(value=value, raw=raw, span=span)

    # --- R04, R03 --------------------------------------------------------------------------------

    def _restated_start(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        """Drop a first step that restates the yield the previous turn stopped at."""
        index = next((i for i, action in enumerate(actions) if isinstance(action, StepAction)), None)
        if index is None:
            return actions
        first = actions[index]
        assert isinstance(first, StepAction)
        current = self.context.current_line
        if first.ref.playbook != self.context.playbook.name or first.calls:
            return actions
        step = self.flow.by_line.get(first.ref.line)
        if step is None or step.opcode != first.ref.code or not _ends_turn(step):
            return actions
        if first.ref.line == current:
            # The current line itself, bare, with more steps after it: executing it would need its call and
            # would end the turn, so it can only restate where the previous turn stopped.
            later = [a for a in actions[index + 1 :] if isinstance(a, StepAction) and a.ref.line != current]
            if step.opcode == Opcode.YLD or step.call is None or not later or step.line in self.flow.until:
                return actions
        elif current not in self.flow.reachable(step.line):
            return actions
        self.note(
            "R04", f"step {step.line} restates where the previous turn stopped; not executed again", first
        )
        return actions[:index] + actions[index + 1 :]

    def _early_yields(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        """A yld before the first executed step is the model thinking aloud, when a step follows it."""
        first_step = next((i for i, action in enumerate(actions) if isinstance(action, StepAction)), None)
        if first_step is None:
            return actions
        result: list[AnswerAction] = []
        for index, action in enumerate(actions):
            if isinstance(action, YieldAction) and index < first_step:
                self.note(
                    "R03", f"`yld {_said(action.target)}` before the first executed step dropped", action
                )
                continue
            result.append(action)
        return result

    # --- R13 -------------------------------------------------------------------------------------

    def _trigger_calls(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        result: list[AnswerAction] = []
        for action in actions:
            previous = result[-1] if result else None
            if (
                isinstance(action, StrayCallAction)
                and isinstance(previous, TriggerAction)
                and previous.fired
                and action.call.name in self._callees_of(previous)
            ):
                self.note(
                    "R13",
                    f"{action.call.name}(...) after `trig?` attached to the trigger that makes it",
                    action,
                )
                result[-1] = replace(previous, calls=(*previous.calls, action.call))
                continue
            result.append(action)
        return result

    def _callees_of(self, action: TriggerAction) -> set[str]:
        return {info.callee for ref in action.fired if (info := self.context.triggers.get(str(ref)))}

    # --- R05 -------------------------------------------------------------------------------------

    def _say_before_step(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        result: list[AnswerAction] = []
        waiting: list[StrayCallAction] = []
        for action in actions:
            if (
                isinstance(action, StrayCallAction)
                and action.call.name in SPEECH_CALLS
                and not _after_step(result)
            ):
                waiting.append(action)
                continue
            if isinstance(action, StepAction) and waiting:
                for stray in waiting:
                    self.note(
                        "R05",
                        f"{stray.call.name}(...) written before step {action.ref.line} moved onto it",
                        stray,
                    )
                action = replace(action, calls=(*(stray.call for stray in waiting), *action.calls))
                waiting = []
            result.append(action)
        result.extend(waiting)  # no step follows them: the verifier reports them
        return result

    # --- R17 -------------------------------------------------------------------------------------

    def _call_on_decision(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        """`Step["Main:04:CND"]` `Respond($message)` where step 04's body starts with `04.01:QUE
        Respond($message)`, not written: the call is that step's work, written on its condition's line.
        The condition is taken as entered and the call moved onto its first step."""
        written = {action.ref.line for action in actions if isinstance(action, StepAction)}
        result: list[AnswerAction] = []
        for action in actions:
            result.append(action)
            if not isinstance(action, StepAction) or not action.calls:
                continue
            step = self._own_step(action)
            if (
                step is None
                or step.opcode != Opcode.CND
                or not step.children
                or cnd_outcome(action.note) is False
            ):
                continue
            first = step.children[0]
            declared = first.call
            if first.line in written or first.opcode not in (Opcode.QUE, Opcode.EXE) or declared is None:
                continue
            # Only a call a CND may not make: a Say is allowed on any line, so a Say on a CND followed by
            # its body's first step left out cannot be told from that step skipped (the mutant benchmark
            # shows it: a skipped-step mutant got through).
            if declared.name in SPEECH_CALLS or any(call.name != declared.name for call in action.calls):
                continue
            self.note(
                "R17",
                f"the call on CND {step.line} is the work of {first.line}, the first step of its body: moved onto it",
                action,
            )
            result[-1] = replace(action, calls=())
            result.append(
                StepAction(ref=self.context.step_ref(first.line), calls=action.calls, span=action.span)
            )
        return result

    def _own_step(self, action: StepAction) -> Step | None:
        """The running playbook's step an action names, when its code is right."""
        if action.ref.playbook != self.context.playbook.name:
            return None
        step = self.flow.by_line.get(action.ref.line)
        return step if step is not None and step.opcode == action.ref.code else None

    # --- R12 -------------------------------------------------------------------------------------

    def _bare_last_step(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        final_index = _final_yield(actions)
        if final_index is None:
            return actions
        final = actions[final_index]
        assert isinstance(final, YieldAction)
        if final.target.kind is not YieldKind.CALL:
            return actions
        steps = [i for i, action in enumerate(actions) if isinstance(action, StepAction)]
        if not steps or steps[-1] > final_index:
            return actions
        fired = any(isinstance(action, TriggerAction) and action.fired for action in actions)
        if len(steps) < 2 and not fired:
            return actions  # a turn must execute a step, unless it stops to run a trigger
        index = steps[-1]
        last = actions[index]
        assert isinstance(last, StepAction)
        step = (
            self.flow.by_line.get(last.ref.line) if last.ref.playbook == self.context.playbook.name else None
        )
        if (
            step is None
            or step.opcode != last.ref.code
            or last.calls
            or step.opcode not in (Opcode.QUE, Opcode.EXE)
        ):
            return actions
        declared = step.call
        if declared is None or not (declared.name in SPEECH_CALLS or declared.natural):
            return actions
        if step.yield_target is not None and step.yield_target.kind is not YieldKind.CALL:
            return actions
        between = actions[index + 1 : final_index]
        if any(not isinstance(action, TriggerAction) for action in between):
            return actions
        if len(steps) >= 2:
            before = actions[steps[-2]]
            assert isinstance(before, StepAction)
            if step.line not in self.flow.reachable(before.ref.line):
                return actions  # not where execution stands: the verifier reports the skipped lines
        elif step.line != self.context.current_line:
            return actions
        self.note("R12", f"step {step.line} written bare before `yld call`: the turn stops before it", last)
        return actions[:index] + actions[index + 1 :]

    # --- R08, R09 --------------------------------------------------------------------------------

    def _yield_words(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        final_index = _final_yield(actions)
        if final_index is None:
            return actions
        final = actions[final_index]
        assert isinstance(final, YieldAction)
        if final.target.kind is YieldKind.AGENT and self.context.in_meeting:
            # `yld for agent 1001` in a meeting: that attendee answers in the meeting.
            target = YieldTarget(kind=YieldKind.MEETING)
            self.note(
                "R09",
                f"`yld agent {final.target.name or ''}`".replace(" `", "`")
                + " in a meeting read as `yld meeting`",
                final,
            )
            return [*actions[:final_index], replace(final, target=target), *actions[final_index + 1 :]]
        if final.target.kind is not YieldKind.UNKNOWN:
            return actions
        words = (final.target.name or "").strip()
        head = words.lower().removeprefix("for ").removeprefix("to ").strip(" .")
        target: YieldTarget | None = None
        last = _last_step(actions, self.context)
        if head in _FINISHED_WORDS and last is not None:
            target = self._finished(last)
            if target is not None:
                self.note("R08", f"`yld {words}` read as `yld {_said(target)}`", final)
        elif head and head.split()[0] not in _YIELD_KEYWORDS:
            name = words.removeprefix("for ").removeprefix("to ").strip(" .")
            if self.context.in_meeting:
                target = YieldTarget(kind=YieldKind.MEETING)
            elif name in self.context.known_agents:
                target = YieldTarget(kind=YieldKind.AGENT, name=name)
            if target is not None:
                self.note("R09", f"`yld {words}` read as `yld {_said(target)}`", final)
        if target is None:
            return actions
        return [*actions[:final_index], replace(final, target=target), *actions[final_index + 1 :]]

    def _finished(self, last: Step) -> YieldTarget | None:
        """What `yld finished` means after `last`: its own ending yield, or return where the playbook ends."""
        if last.opcode == Opcode.RET:
            return YieldTarget(kind=YieldKind.RETURN)
        target = last.yield_target
        if target is not None and target.kind in (YieldKind.EXIT, YieldKind.RETURN):
            return target
        if END in self.flow.reachable(last.line):
            return YieldTarget(kind=YieldKind.RETURN)
        return None

    # --- R10 -------------------------------------------------------------------------------------

    def _implied_yield_step(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        final_index = _final_yield(actions)
        last = _last_step(actions, self.context)
        if final_index is None or last is None:
            return actions
        final = actions[final_index]
        assert isinstance(final, YieldAction)
        kind = final.target.kind
        own = last.yield_target
        if kind in (YieldKind.CALL, YieldKind.UNKNOWN, YieldKind.RETURN) or last.opcode == Opcode.RET:
            return actions
        if last.opcode == Opcode.YLD and (own is None or own.kind is not YieldKind.CALL):
            return actions
        if own is not None and (own.kind is kind or own.kind is not YieldKind.CALL):
            return actions
        if own is None and kind is YieldKind.MEETING and self.context.in_meeting:
            return actions  # yld meeting is offered after any step of a meeting
        for line, _implied in self.flow.reachable(last.line).items():
            step = self.flow.by_line.get(line)
            if step is None or step.opcode != Opcode.YLD or step.yield_target is None:
                continue
            if step.yield_target.kind is kind:
                self.note(
                    "R10",
                    f"`yld {_said(final.target)}` is the yield of step {line}; that step taken as executed",
                    final,
                )
                implied = StepAction(ref=self.context.step_ref(line), span=final.span)
                return [*actions[:final_index], implied, *actions[final_index:]]
        return actions

    def _implied_return_step(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        """`Return[...]` with no yld, and the next line that does work after the last written step is a RET
        (`01:QUE Say(...)` then `02:RET`): that RET is what the answer did, taken as executed (then R07
        adds `yld return`)."""
        if _final_yield(actions) is not None:
            return actions
        returned = [action for action in actions if isinstance(action, ReturnAction)]
        last = _last_step(actions, self.context)
        if not returned or last is None or last.opcode == Opcode.RET or END in self.flow.reachable(last.line):
            return actions
        ahead = [
            line
            for line in self.flow.reachable(last.line)
            if line != END and (step := self.flow.by_line.get(line)) is not None and step.opcode == Opcode.RET
        ]
        if len(ahead) != 1:
            return actions
        self.note(
            "R10", f"`Return[...]` is the work of RET {ahead[0]}; that step taken as executed", returned[0]
        )
        implied = StepAction(ref=self.context.step_ref(ahead[0]), span=returned[0].span)
        index = actions.index(returned[0])
        return [*actions[:index], implied, *actions[index:]]

    # --- R18 -------------------------------------------------------------------------------------

    def _program_yield(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        """The turn ends at a step whose yield the program fixes (a YLD, a RET, an inline `; YLD for ...`)
        with another yld (`Step["Main:04:YLD"] yld call` at `04:YLD for exit`): the step's own yield. The
        model executed that step; what the step does is the program's, not the answer's."""
        final_index = _final_yield(actions)
        last = _last_step(actions, self.context)
        if final_index is None or last is None:
            return actions
        final = actions[final_index]
        assert isinstance(final, YieldAction)
        kind = final.target.kind
        if kind is YieldKind.UNKNOWN:
            return actions
        if last.opcode == Opcode.RET:
            # `yld call` after RET is R07's; `yld return` is right.
            if kind in (YieldKind.RETURN, YieldKind.CALL):
                return actions
            target = YieldTarget(kind=YieldKind.RETURN)
        elif last.yield_target is not None and (
            last.opcode == Opcode.YLD or kind not in (YieldKind.RETURN, YieldKind.EXIT)
        ):
            # An inline yield (`03:QUE Say(...); YLD for call`) is the program's too, but `yld return` or
            # `yld exit` there says a RET or YLD exit after it was passed unwritten: skipped-step mutants
            # (a RET's lines removed) end that way, so those stay the answer's to get right (V05).
            own = last.yield_target
            if own.kind is kind and own.name == final.target.name:
                return actions
            if own.kind is kind and own.kind is not YieldKind.AGENT:
                return actions
            if (
                kind is YieldKind.RETURN
                and own.kind is YieldKind.CALL
                and self.flow.successors(last.line) == {END}
            ):
                return actions  # R11: it yields, then the playbook returns
            if (
                kind is YieldKind.MEETING
                and self.context.in_meeting
                and (own.kind is YieldKind.USER or (own.kind is YieldKind.CALL and last.opcode != Opcode.YLD))
            ):
                return actions  # in a meeting the others answer for the user, and waiting runs the calls
            if last.line in self.flow.until:
                return actions  # a conversation step's yield is its own to skip when the step is done
            target = own
        else:
            return actions
        self.note(
            "R18",
            f"`yld {_said(final.target)}` at step {last.line} ({last.opcode}"
            + (f" for {_said(last.yield_target)}" if last.opcode == Opcode.YLD and last.yield_target else "")
            + f"), whose yield the program fixes: read as `yld {_said(target)}`",
            final,
        )
        return [*actions[:final_index], replace(final, target=target), *actions[final_index + 1 :]]

    # --- R06, R07, R11 ---------------------------------------------------------------------------

    def _return_end(self, actions: list[AnswerAction]) -> list[AnswerAction]:
        last = _last_step(actions, self.context)
        if last is None:
            return actions
        final_index = _final_yield(actions)
        final = actions[final_index] if final_index is not None else None
        returns = last.opcode == Opcode.RET or (
            isinstance(final, YieldAction)
            and final.target.kind is YieldKind.RETURN
            and last.yield_target is not None
            and last.yield_target.kind is YieldKind.CALL
            and self.flow.successors(last.line) == {END}
        )
        returned_at_end = (
            final is None
            and any(isinstance(action, ReturnAction) for action in actions)
            and END in self.flow.reachable(last.line)
        )
        if not returns and not returned_at_end:
            return actions
        result = list(actions)
        if returned_at_end:
            result.append(YieldAction(target=YieldTarget(kind=YieldKind.RETURN), span=None))
            self.note("R07", "`Return[...]` where the playbook ends, without a final yld: `yld return` added")
            final_index = len(result) - 1
        if (
            isinstance(final, YieldAction)
            and final.target.kind is YieldKind.CALL
            and last.opcode == Opcode.RET
        ):
            result[final_index] = replace(final, target=YieldTarget(kind=YieldKind.RETURN))  # type: ignore[index]
            self.note("R07", f"`yld call` after RET at {last.line} read as `yld return`", final)
        if last.opcode != Opcode.RET:
            self.note(
                "R11",
                f"`yld return` after step {last.line} (YLD call, the playbook's end): it yields, then returns",
                final,
            )
        if not any(isinstance(action, VarAction) and action.name == "__" for action in result):
            summary = f"{self.context.playbook.name} finished at step {last.line}"
            at = final_index if final_index is not None else len(result)
            result.insert(at, VarAction(name="__", value=summary, raw=summary, span=None))
            self.note(
                "R06",
                f"no `Var[$__, summary]`: the runtime wrote {summary!r}",
                actions[at - 1] if at else None,
            )
            final_index = at + 1 if final_index is not None else None
        if final_index is None and last.opcode == Opcode.RET and not returned_at_end:
            result.append(YieldAction(target=YieldTarget(kind=YieldKind.RETURN), span=None))
            self.note("R07", f"RET at {last.line} without a final yld: `yld return` added", None)
        return result


def _ends_turn(step: Step) -> bool:
    return step.opcode in (Opcode.YLD, Opcode.RET) or step.yield_target is not None


def _after_step(result: list[AnswerAction]) -> bool:
    """Whether a step is still open at the end of `result` (a call now would be its own)."""
    for action in reversed(result):
        if isinstance(action, StepAction):
            return True
        if isinstance(action, (YieldAction, TriggerAction)):
            return False
    return False


def _final_yield(actions: list[AnswerAction]) -> int | None:
    for index in range(len(actions) - 1, -1, -1):
        if isinstance(actions[index], YieldAction):
            return index
    return None


def _last_step(actions: list[AnswerAction], context: TurnContext) -> Step | None:
    for action in reversed(actions):
        if isinstance(action, StepAction):
            if action.ref.playbook != context.playbook.name:
                return None
            step = context.flow.by_line.get(action.ref.line)
            return step if step is not None and step.opcode == action.ref.code else None
    return None


def _said(target: YieldTarget) -> str:
    if target.kind is YieldKind.UNKNOWN:
        return target.name or ""
    return f"{target.kind.value} {target.name}" if target.name else target.kind.value


# `yes — reason`, `No, the user gave up`, `no`: the word alone or followed by punctuation, so that prose
# such as "No specific game event yet" states no outcome.
_CND_OUTCOME = re.compile(
    r"[\s`*_\"'(\[]*(?P<word>yes|no|true|false)[\s`*_\"')\]]*(?:[—–\-:,.;!]|\Z)", re.IGNORECASE
)


def cnd_outcome(note: str) -> bool | None:
    """The outcome a CND step's note states: `yes — the user gave a number` -> True, `no — ...` -> False,
    anything else -> None (either way out is accepted)."""
    found = _CND_OUTCOME.match(note)
    if found is None:
        return None
    return found.group("word").lower() in ("yes", "true")
