"""Triggers between steps (seed 003: "triggers are evaluated between steps and on relevant updates").

Two kinds. A CND trigger whose text the runtime can evaluate (`When $x > 15`) is checked whenever one of
its variables changes, with no model: when it turns true the playbook runs at the next step boundary.
Any other CND or EVT trigger is judged by the model when new messages arrive: a short turn answering
`trig? no` or `trig? Trigger["PB:T1:CND"]`, checked against the real triggers before anything runs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pal_core.contract import ContractSyntaxError, TriggerAction, parse_answer
from pal_core.ir import Call, Playbook, Trigger, TriggerCode
from runtime.calls import invoke_call
from runtime.expressions import NotEvaluable, evaluate, referenced_variables
from runtime.models.base import ChatMessage, ModelRequest, RequestKind

if TYPE_CHECKING:
    from runtime.agent import AgentInstance
    from runtime.execution import Execution

_LEADING_WORD = re.compile(r"\s*(?:when|if|whenever|once)\s+", re.IGNORECASE)


def machine_condition(trigger: Trigger) -> str | None:
    """The expression of a CND trigger the runtime can evaluate itself, else None."""
    if trigger.code != TriggerCode.CND or "$" not in trigger.text:
        return None
    expression = _LEADING_WORD.sub("", trigger.text, count=1)
    names = referenced_variables(expression)
    if not names:
        return None
    try:
        evaluate(expression, dict.fromkeys(names, 0))
    except NotEvaluable:
        # A type error with zeros does not mean the text is not an expression; only syntax matters here.
        from runtime.expressions import parse_expression

        try:
            parse_expression(expression)
        except NotEvaluable:
            return None
    return expression


class TriggerWatcher:
    """Watches an agent's variables and queues playbooks whose machine-checkable trigger turns true."""

    def __init__(self, instance: AgentInstance) -> None:
        self.instance = instance
        self.watched: list[tuple[Playbook, str, set[str]]] = []
        self.last: dict[str, bool] = {}
        for playbook in instance.playbooks.values():
            for trigger in playbook.triggers:
                expression = machine_condition(trigger)
                if expression is not None:
                    self.watched.append((playbook, expression, referenced_variables(expression)))

    def install(self) -> None:
        if self.watched:
            self.instance.state.variables.on_change(self.changed)

    def changed(self, name: str) -> None:
        values = self.instance.state.variables.snapshot()
        for playbook, expression, names in self.watched:
            if name not in names or not names <= values.keys():
                continue
            try:
                holds = bool(evaluate(expression, values))
            except NotEvaluable:
                continue
            key = f"{playbook.name}:{expression}"
            if (
                holds
                and not self.last.get(key, False)
                and playbook.name not in self.instance.pending_triggers
            ):
                self.instance.pending_triggers.append(playbook.name)
            self.last[key] = holds


def model_triggers(instance: AgentInstance) -> list[tuple[Playbook, Trigger]]:
    """CND/EVT triggers only a model can judge."""
    found = []
    for playbook in instance.playbooks.values():
        for trigger in playbook.triggers:
            if trigger.code in (TriggerCode.CND, TriggerCode.EVT) and machine_condition(trigger) is None:
                found.append((playbook, trigger))
    return found


async def check_message_triggers(execution: Execution) -> None:
    """Ask the model whether the agent's new messages fire a trigger; run the playbooks that fire."""
    instance = execution.agent
    services = execution.services
    candidates = model_triggers(instance)
    if not candidates or not instance.unread or services.model is None:
        return
    shaping = services.shaping
    known = {f"{playbook.name}:{trigger.id}:{trigger.code}": playbook for playbook, trigger in candidates}
    listing = "\n".join(
        f'- `Trigger["{ref}"]` {playbook.name}: {trigger.text}'
        for (playbook, trigger), ref in zip(candidates, known, strict=True)
    )
    messages = "\n".join(f"- from {m.sender_klass} ({m.sender_id}): {m.content}" for m in instance.unread)
    prompt = (
        f"You are agent {instance.klass}. New messages:\n{messages}\n\nTriggers:\n{listing}\n\n"
        "Does a message fire a trigger? Answer with exactly two lines:\n"
        'trig? no   (or: trig? `Trigger["<Playbook>:T<n>:<Code>"]`)\nyld call'
    )
    request = ModelRequest(
        kind=RequestKind.TRIGGERS,
        grammar=shaping.trigger_check(tuple(known)).grammar if shaping is not None else None,
        messages=(ChatMessage(role="user", content=prompt),),
        max_tokens=services.limits.answer_tokens(RequestKind.TRIGGERS),
        temperature=execution.services.limits.temperature,
        seed=execution.services.limits.seed,
        metadata={"agent": instance.klass, "mode": "triggers"},
    )
    call_id, response = await execution.services.call_model(request, instance)
    text = response.text
    try:
        answer = parse_answer(text)
    except ContractSyntaxError as error:
        execution.services.trace(
            instance, "violation", model_call=call_id, detail=f"trigger check: {error.message}"
        )
        return
    fired = [ref for action in answer.actions if isinstance(action, TriggerAction) for ref in action.fired]
    for ref in fired:
        playbook = known.get(str(ref))
        if playbook is None:
            execution.services.trace(
                instance, "violation", model_call=call_id, detail=f"unknown trigger {ref}"
            )
            continue
        execution.services.trace(
            instance, "trigger", playbook=playbook.name, model_call=call_id, detail=str(ref)
        )
        await invoke_call(execution, Call(name=playbook.name))
