"""MagenticOne: the orchestrator as the chair, its task and progress ledgers as model turns.

As `MagenticOneOrchestrator` does: the model surveys the facts and makes a plan (outer loop); the chair
says the task ledger to the meeting; then in each round (inner loop) the model fills the progress ledger
(`$ledger`: is_request_satisfied, is_in_loop, is_progress_being_made, next_speaker,
instruction_or_question, each with an answer and a reason), the chair counts stalls (re-planning after
`max_stalls`), says the instruction to the next speaker with the turn, and checks the team's termination
conditions on the reply. When the request is satisfied, or after `max_turns` rounds, the model writes the
final answer, which the chair says to the meeting. The orchestrator's prompts are the playbook's notes;
the task ledger message is built from the same template, so the transcript carries the same text.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from importers.common.steps import StepList, literal

if TYPE_CHECKING:
    from importers.autogen._chair import ChairSteps

_FIELD = re.compile(r"\{(task|team|facts|plan|names)\}")
_LEDGER_KEYS = (
    "is_request_satisfied",
    "is_progress_being_made",
    "is_in_loop",
    "instruction_or_question",
    "next_speaker",
)


def _note(template: str, fill: dict[str, str]) -> str:
    """A prompt as one note line, its fields named as the variables or filled with the team."""
    text = _FIELD.sub(lambda match: fill[match.group(1)], template)
    return " ".join(text.split())


def _concatenation(template: str, values: dict[str, str]) -> str:
    """An expression building `template` with its fields taken from `values` (expressions)."""
    parts: list[str] = []
    position = 0
    for match in _FIELD.finditer(template):
        if match.start() > position:
            parts.append(literal(template[position : match.start()]))
        parts.append(values[match.group(1)])
        position = match.end()
    if position < len(template):
        parts.append(literal(template[position:]))
    return " + ".join(parts) or '""'


def write_magentic(chair: ChairSteps) -> tuple[Any, ...]:
    team, steps = chair.team, chair.steps
    options = team.policy.options
    prompts = options["prompts"]
    names = ", ".join(member.name for member in team.members)
    fill = {"task": "$task", "team": options["team"], "facts": "$facts", "plan": "$plan", "names": names}
    final = prompts["final"]  # a custom final_answer_prompt is used as given, without the task
    for text in (
        prompts["facts"],
        prompts["plan"],
        prompts["progress"],
        final,
        prompts["facts_update"],
        prompts["plan_update"],
    ):
        chair.notes.append(_note(text, fill))
    orchestrator = literal(options["speaker_name"])
    own_turn = literal(f"meeting @{team.name}")
    chair.start()
    steps.add("EXE", "$rounds:int = 0")
    steps.add("EXE", "$stalls:int = 0")
    steps.add("EXE", "$facts:str = the answer to the pre-survey of note N1 for $task")
    steps.add("EXE", "$plan:str = the plan note N2 asks for")
    steps.label("outer")
    steps.add("EXE", f"{chair.helper('start_chat')}(team={literal(team.source)})")
    ledger = _concatenation(
        prompts["full"],
        {"task": "$task", "team": literal(options["team"]), "facts": "$facts", "plan": "$plan"},
    )
    steps.add("EXE", f"$ledger_message:str = {ledger}")
    steps.add("QUE", f"Say({own_turn}, $ledger_message)")
    steps.add("EXE", f'$messages = $messages + [{{"source": {orchestrator}, "content": $ledger_message}}]')
    steps.label("inner")
    if team.max_turns is not None:
        body = StepList()
        body.add("EXE", '$reason:str = "Max rounds reached."')
        body.jump("final")
        steps.branch(f"If $rounds > {team.max_turns}", body)
    steps.add("EXE", "$rounds = $rounds + 1")
    steps.add("EXE", "$attempt:int = 0")
    steps.label("ledger")
    steps.add(
        "EXE",
        "$ledger:dict = the progress ledger of note N3: a JSON object with the keys "
        + ", ".join(_LEDGER_KEYS)
        + ', each {"reason": ..., "answer": ...}',
    )
    keys_present = " and ".join(f"{literal(key)} in $ledger" for key in _LEDGER_KEYS)
    valid = f'{keys_present} and ($ledger["is_request_satisfied"]["answer"] or $ledger["next_speaker"]["answer"] in $names)'
    retry = StepList()
    retry.add("EXE", "$attempt = $attempt + 1")
    again = StepList()
    again.jump("ledger")
    retry.branch("If $attempt < 10", again)
    fail = StepList()
    fail.add("EXE", '$stop_reason = "Failed to parse ledger information after multiple retries."')
    fail.jump("end")
    retry.extend(fail)
    steps.branch(f"If not ({valid})", retry)
    body = StepList()
    body.add("EXE", '$reason = $ledger["is_request_satisfied"]["reason"]')
    body.jump("final")
    steps.branch('If $ledger["is_request_satisfied"]["answer"]', body)
    body = StepList()
    body.add("EXE", "$stalls = $stalls + 1")
    steps.branch(
        'If not $ledger["is_progress_being_made"]["answer"] or $ledger["is_in_loop"]["answer"]', body
    )
    body = StepList()
    body.add("EXE", "$stalls = $stalls - 1 if $stalls > 0 else 0")
    steps.branch("Otherwise", body)
    body = StepList()
    body.add("EXE", "$facts = the updated facts note N5 asks for")
    body.add("EXE", "$plan = the new plan note N6 asks for")
    body.jump("outer")
    steps.branch(f"If $stalls >= {int(options['max_stalls'])}", body)
    steps.add("EXE", '$instruction:str = $ledger["instruction_or_question"]["answer"]')
    steps.add("EXE", '$speaker:str = $names[$ledger["next_speaker"]["answer"]]')
    steps.add("EXE", '$turn:str = "meeting @" + $speaker')
    steps.add("QUE", "Say($turn, $instruction)")
    steps.add("EXE", f'$messages = $messages + [{{"source": {orchestrator}, "content": $instruction}}]')
    chair.wait_for_reply(steps, "wait")
    steps.add("EXE", "$messages = $messages + [$reply]")
    steps.add("EXE", "$delta = [$reply]")
    steps.add("EXE", "$last:dict = $reply")
    if team.termination is not None:
        root = chair.termination.check(team.termination, steps)
        body = StepList()
        body.add("EXE", f"$stop_reason = {root}")
        body.jump("end")
        steps.branch(f"If {root} != None", body)
    steps.jump("inner")
    steps.label("final")
    steps.add("EXE", "$final:str = the final answer note N4 asks for")
    steps.add("QUE", f"Say({own_turn}, $final)")
    steps.add("EXE", f'$messages = $messages + [{{"source": {orchestrator}, "content": $final}}]')
    steps.add("EXE", "$stop_reason = $reason")
    steps.label("end")
    steps.add("EXE", '$result:dict = {"messages": $messages, "stop_reason": $stop_reason}')
    steps.add("RET", "$result")
    return steps.build()
