"""Meeting turns: whom an answer may give the turn in a meeting.

A turn in a meeting (`TurnContext.participants` known) speaks to the meeting with `Say("meeting", ...)`, and
may give the turn to named participants, `Say("meeting @Chef @Critic", ...)` (runtime.meeting_playbooks). A
name that is not in the meeting is V10: a message given to nobody would leave the meeting waiting. The
chair's choice of the next speaker is a step that fills a variable from a list the program holds
(`$choice = ... one of $candidates`): pal_core.contract.fixed holds it to that list (V19).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract.fixed import FixedViolation
from pal_core.ir import ArgKind

if TYPE_CHECKING:
    from pal_core.contract.turn import TurnContext
    from pal_core.contract.verify import VerifiedTurn

HUMAN = frozenset({"human", "user"})


def check_meeting_targets(turn: VerifiedTurn, context: TurnContext) -> list[FixedViolation]:
    """The Say targets of a verified turn that name someone not in the meeting (V10)."""
    from pal_core.contract.verify import ExecutedStep

    participants = set(context.participants)
    if not participants:
        return []
    lowered = {name.lower() for name in participants}
    broken: list[FixedViolation] = []
    for action in turn.actions:
        if not isinstance(action, ExecutedStep):
            continue
        for call in action.calls:
            if call.name not in SPEECH_CALLS or len(call.arguments) < 2:
                continue
            target = call.arguments[0]
            if target.kind is not ArgKind.LITERAL or not isinstance(target.value, str):
                continue
            words = target.value.split()
            if not words or words[0].lower() != "meeting":
                continue
            for word in words[1:]:
                if not word.startswith("@"):
                    continue
                name = word[1:]
                if name.lower() in lowered or name.lower() in HUMAN or name.isdigit():
                    continue
                shown = ", ".join(sorted(participants))
                broken.append(
                    FixedViolation(
                        code="V10",
                        message=f"@{name} is not in the meeting (its participants: {shown})",
                        action=action.action,
                    )
                )
    return broken
