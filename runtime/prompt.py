"""The prompt of one model turn (seeds 003/004): the playbook's PAL, where execution stands, the state,
what the agent can call, the triggers, the recent session log and new messages, and the answer format."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract.turn import CalleeKind, TurnContext
from pal_core.ir import TriggerCode
from pal_core.node_cache import per_node
from pal_core.step_text import TYPED_VARIABLE_RE
from pal_core.writer import write_playbook
from runtime.models.base import ChatMessage

if TYPE_CHECKING:
    from runtime.execution import Execution
    from runtime.state import Frame

SYSTEM = """You are the CPU of a PAL runtime. PAL (Playbooks Assembly Language) programs are playbooks of \
numbered steps; each step has a command code: EXE (do or assign), QUE (call a playbook or function), TNK \
(think), CND (if/while/for/otherwise: its sub-steps run when the condition holds), CHK (apply a note), RET \
(return), JMP (jump to a line), YLD (yield: user, call, return, exit, meeting).

You execute steps in order from the line you are given and report what you did, one action per line, in \
exactly this format:

recap – <one sentence: where things stand>
plan – <one sentence: what you do now>
`Step["<Playbook>:<Line>:<Code>"]` <inline call, if the step makes one, in backticks>
`Step["<Playbook>:<Line>:CND"]` yes — <reason>   (or: no — <reason>; says whether the condition holds)
`Var[$<name>, <JSON value>]`          (when a step sets a variable)
trig? no                              (or trig? `Trigger["<Playbook>:T<n>:<Code>"]` when a trigger fires)
yld <user|call|return|exit|meeting>   (the last line: why you stop)

Rules the runtime checks before anything you write takes effect:
- Start at the given line; never skip a line; follow CND bodies, JMP targets and loops exactly. After a \
CND's `yes` the next step is the first of its body; after `no` it is the step after the body.
- Use the exact `Playbook:Line:Code` of the program for every step.
- Inline calls: `Say("user", "text")`, `Say("meeting", "text")`, `$x = Func($y, key="v")`. Arguments are \
literals or $variables. Say may be used on any step; other calls only on QUE or EXE steps.
- Call only what the step names or what is listed under "Playbooks you can call"; some of those need the \
user's approval, which the runtime asks for.
- Stop at a YLD step with the matching yld (YLD user -> yld user, YLD call -> yld call, YLD exit -> yld exit).
- After QUE calls whose results you need, stop with yld call; the runtime runs them and calls you again.
- RET: `Step["P:NN:RET"]` `Return[<value>]` `Var[$__, "<1-5 line summary>"]` then yld return.
- Write nothing after the final yld."""

SYSTEM_UNDER_GRAMMAR = """You are the CPU of a PAL runtime. PAL programs are playbooks of numbered steps. You \
execute steps in order from the line you are given and report what you did, one action per line, in exactly \
the format of the example answers. `Var[$name, value]` stores a value: when the user gave it, write it as \
the user wrote it. Decide each condition from the state and the messages."""
"""The system prompt for a model whose answers a turn grammar constrains (the bundled local model): the
grammar enforces the format and the legal paths that SYSTEM spells out, so the model reads only what it
decides. Half the prompt's tokens, and the part a new process has to evaluate first."""


@dataclass(frozen=True, slots=True)
class PromptSettings:
    """Knobs of prompt building: what a turn's prompt carries of what can grow without bound."""

    session_log_lines: int = 30
    """The most recent session log entries shown."""
    max_value_chars: int = 400
    """Characters of one variable's value shown (JSON), cut with `…`."""
    max_entry_chars: int = 300
    """Characters of one session log entry or new message shown."""


def build_messages(
    execution: Execution,
    frame: Frame,
    *,
    context: TurnContext,
    settings: PromptSettings = PromptSettings(),
    examples: str | None = None,
    under_grammar: bool = False,
) -> list[ChatMessage]:
    """The system and user messages for continuing `frame` at its current line. What the model may call and
    which triggers exist come from the turn's description (`context`), the one the verifier checks against.
    The parts that stay the same for the whole playbook come first (the agent, the playbook, what it can call,
    the triggers, the example answers), then what changes every turn (state, log, messages, the task), so a
    model that reuses an evaluated prompt prefix reuses most of it."""
    agent = execution.agent
    playbook = frame.playbook
    named = f", named {agent.display_name}" if agent.display_name else ""
    parts: list[str] = [f"# Agent {agent.klass} (id {agent.id}{named})"]
    if agent.ir.description:
        parts.append(agent.ir.description)
    parts.append("## The playbook you are executing\n```pal\n" + _playbook_text(playbook) + "\n```")
    callable_lines = _callables(context)
    if callable_lines:
        parts.append("## Playbooks you can call\n" + "\n".join(callable_lines))
    triggers = _triggers(context)
    if triggers:
        parts.append("## Triggers\n" + "\n".join(triggers))
    if examples:
        parts.append("## Example answers (format only; use the real lines of the program)\n" + examples)
    stable_chars = len("\n\n".join(parts)) + 2  # the same in every turn of the playbook: up to here
    parts.append("## State\n" + _state(execution, frame, settings, context.participants))
    log = agent.state.session_log.tail(settings.session_log_lines)
    cut = settings.max_entry_chars
    if log:
        parts.append(
            "## Session log (most recent last)\n" + "\n".join(f"- {_clip(entry, cut)}" for entry in log)
        )
    if agent.unread:
        parts.append(
            "## New messages\n"
            + "\n".join(
                f"- from {message.sender_klass} ({message.sender_id}): {_clip(message.content, cut)}"
                for message in agent.unread
            )
        )
    step = frame.flow.by_line.get(frame.line) if frame.flow is not None else None
    current = (
        f"`{step.line}:{step.opcode} {step.text}`".replace(" `", "`") if step is not None else frame.line
    )
    parts.append(
        f"## Your task\nContinue executing {playbook.name} at line {frame.line}: {current}\n"
        f'Begin with recap and plan, then `Step["{playbook.name}:{frame.line}:{step.opcode if step else "?"}"]`.'
    )
    system = SYSTEM_UNDER_GRAMMAR if under_grammar else SYSTEM
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content="\n\n".join(parts), stable_chars=stable_chars),
    ]


def _callables(context: TurnContext) -> list[str]:
    """What the model may call on its own: every callee but the running playbook, the speech builtins (in
    the format above) and what only steps may call."""
    lines: list[str] = []
    builtins: list[str] = []
    for callee in context.callees.values():
        if callee.name == context.playbook.name or not callee.model_callable or callee.name in SPEECH_CALLS:
            continue
        approval = " (needs the user's approval)" if callee.requires_approval else ""
        if callee.kind is CalleeKind.BUILTIN:
            builtins.append(callee.signature)
            continue
        signature = callee.signature or callee.name
        summary = f": {callee.summary}" if callee.summary else ""
        lines.append(f"- {signature}{summary}{approval}")
    if builtins:
        lines.append("- builtins: " + ", ".join(builtins))
    return lines


def _triggers(context: TurnContext) -> list[str]:
    return [
        f'- `Trigger["{ref}"]` {info.text}'
        for ref, info in context.triggers.items()
        if info.ref.code != TriggerCode.BGN
    ]


def _state(
    execution: Execution, frame: Frame, settings: PromptSettings, participants: tuple[str, ...] = ()
) -> str:
    """The variables the playbook reads (its parameters and the `$variables` its steps name) with their
    values; others (an imported program's session, another playbook's scratch) are not this turn's."""
    variables = execution.agent.state.variables
    read = _read_by(frame.playbook)
    rows = []
    for name, value in variables.snapshot().items():
        if name not in read:
            continue
        declared = variables.type_of(name)
        kind = f":{declared}" if declared else ""
        rows.append(f"- ${name}{kind} = {_value(value, settings.max_value_chars)}")
    stack = " > ".join(execution.stack.describe()) or "(empty)"
    text = "Variables:\n" + ("\n".join(rows) if rows else "- (none)") + f"\nCall stack: {stack}"
    meeting = frame.meeting_id
    if meeting:
        text += f'\nIn meeting {meeting}: speak with Say("meeting", ...), wait with yld meeting.'
        if participants:
            text += f" Participants: {', '.join(participants)}."
    artifacts = execution.agent.state.artifacts
    if artifacts:
        text += "\nArtifacts: " + ", ".join(
            f"{name} ({artifact.summary})" for name, artifact in artifacts.items()
        )
    return text


@per_node
def _read_by(playbook: Any) -> frozenset[str]:
    """The variables a playbook's turns read: its parameters and every `$name` its steps and notes write."""
    names = {parameter.name for parameter in playbook.parameters}
    for step in playbook.all_steps():
        names.update(match.group(1) for match in TYPED_VARIABLE_RE.finditer(step.text))
    for note in playbook.notes:
        names.update(match.group(1) for match in TYPED_VARIABLE_RE.finditer(note.text))
    return frozenset(names)


@per_node
def _playbook_text(playbook: Any) -> str:
    """The playbook as the prompt shows it (the canonical PAL text; the same every turn)."""
    return write_playbook(playbook).rstrip()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value(value: Any, limit: int) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def retry_message(violations: list[str], frame: Frame) -> str:
    """What the model reads after a rejected answer."""
    listed = "\n".join(f"- {violation}" for violation in violations)
    return (
        "Your answer was rejected; nothing of it was applied:\n"
        f"{listed}\n"
        f"Answer again from line {frame.line} of {frame.playbook.name}, following the format and the rules."
    )
