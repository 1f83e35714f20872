"""Writing the PAL program of a team: the chair agent and one agent per participant.

- The chair (named after the team) has `Run($task:str) -> dict` (trigger BGN: `pal run --input
  '{"task": ...}'` calls it), which calls its meeting playbook `GroupChat($task)` and returns
  `{"messages": [...], "stop_reason": ...}`; `GroupChat` is `meeting: true` with every participant a
  required attendee, and its steps are written by `_chair`.
- Each participant has a `GroupChat()` meeting playbook: it listens in the meeting, and when the chair
  gives it the turn it answers from what it heard — a custom agent through its live `on_messages_stream`,
  an ag2 agent through `a_generate_reply` (Python playbooks, no model), an LLM agent through its `Respond`
  playbook that the run's model executes with the agent's system message and tools.
"""

from __future__ import annotations

from collections.abc import Iterable

from importers.autogen import support as autogen_support
from importers.autogen._chair import MEETING_PLAYBOOK, ChairSteps
from importers.autogen._model import Member, MemberKind, Team
from importers.autogen._turns import (
    REPLY_PLAYBOOK,
    RESPOND_PLAYBOOK,
    ag2_playbooks,
    assistant_playbooks,
    user_reply_playbook,
)
from importers.common.emit import AgentParts, SupportModule, numbered_notes
from importers.common.naming import safe_description
from importers.common.steps import StepList, literal
from pal_core.ir import Agent, Metadata, Parameter, Playbook, Program, Trigger

ENTRY_PLAYBOOK = "Run"
"""The chair's playbook that runs the chat on a task and returns the transcript."""
SUPPORT = SupportModule(
    autogen_support,
    name="autogen",
    reserved=(ENTRY_PLAYBOOK, MEETING_PLAYBOOK, RESPOND_PLAYBOOK, REPLY_PLAYBOOK),
    defaults=False,
)
"""Where the helper playbooks are bound."""


def _framework(team: Team) -> str:
    return "ag2" if team.framework == "ag2" else "AutoGen"


def _outside_name(team: Team) -> str:
    """Who a hand-off outside the team goes to: the user (HandoffTermination's target names it)."""
    members = {member.name for member in team.members}

    def targets(node: object) -> Iterable[str]:
        if node is None:
            return
        if getattr(node, "kind", "") == "handoff":
            yield str(node.options["target"])
        for child in getattr(node, "children", ()):
            yield from targets(child)

    outside = [target for target in targets(team.termination) if target not in members]
    return outside[0] if outside else "user"


def build_program(team: Team) -> Program:
    """The PAL program of `team`."""
    outside = _outside_name(team)
    kind = team.class_name.rpartition(".")[2]
    details = {"team": team.source, "kind": kind, "framework": team.framework}
    parts = AgentParts(
        name=team.name,
        description=safe_description(
            f"{_framework(team)} {kind} `{team.title}` imported from `{team.source}` "
            f"by `pal import autogen`: the chair of its group chat, a PAL meeting of "
            f"{', '.join(m.pal for m in team.members)}. {team.description}".strip()
        ),
        metadata=Metadata(extra={"autogen": details}),
        support=SUPPORT,
    )
    chair = ChairSteps(team, parts.helper, outside)
    steps = chair.write()
    notes = [  # the policy's notes first: the steps refer to them as N1, N2, ...
        *chair.notes,
        'Each turn is given with Say("meeting @Name", "@Name"); the participant answers the chair in the '
        "meeting, and $messages keeps the transcript as the team's run returns it.",
    ]
    meeting = Playbook(
        name=MEETING_PLAYBOOK,
        parameters=(Parameter(name="task", type="str"),),
        returns="dict",
        description=safe_description(
            f"Chairs the {team.title} chat on $task: the task first, then the speakers the team's policy picks, "
            "until a termination condition holds; returns the transcript and the stop reason."
        ),
        metadata=Metadata(meeting=True, required_attendees=tuple(member.pal for member in team.members)),
        steps=steps,
        notes=numbered_notes(notes),
    )
    entry_steps = StepList()
    entry_steps.add("QUE", f"$result:dict = {MEETING_PLAYBOOK}(task=$task)")
    entry_steps.add("YLD", "for call")
    entry_steps.add("RET", "$result")
    entry = Playbook(
        name=ENTRY_PLAYBOOK,
        parameters=(Parameter(name="task", type="str"),),
        returns="dict",
        description=(
            f"Runs the team on a task, as `{team.title}.run(task=...)` does: returns "
            '{"messages": [{"source": ..., "content": ...}, ...], "stop_reason": ...}.'
        ),
        triggers=(Trigger(id="T1", code="BGN", text="At the beginning"),),
        steps=entry_steps.build(),
    )
    parts.main.extend((entry, meeting))
    agents = [parts.build()]
    names = chair.names_map()
    for member in team.members:
        agents.append(_member_agent(team, member, names, chair.agents_map()))
    return Program(agents=tuple(agents))


def _member_agent(team: Team, member: Member, names: dict[str, str], agents: dict[str, str]) -> Agent:
    parts = AgentParts(
        name=member.pal,
        description=safe_description(
            f"{_framework(team)} agent `{member.name}` ({member.class_name}) of "
            f"`{team.source}`. {member.description}".strip()
        ),
        metadata=Metadata(extra={"autogen": {"agent": member.name, "class": member.class_name}}),
        support=SUPPORT,
    )
    helper = parts.helper
    steps = StepList()
    chair = team.name
    steps.add("EXE", f"$agents:dict = {literal(agents)}")
    steps.add("EXE", f"$names:dict = {literal(names)}")
    steps.add("EXE", "$heard:list = []")
    steps.add("EXE", "$history:list = []")
    if member.kind is MemberKind.LLM:
        steps.add("EXE", "$round_calls:list = []")
        steps.add("EXE", "$tool_results:list = []")
    steps.label("listen")
    steps.add("EXE", '$new:list = WaitForMessage("meeting")')
    steps.add("EXE", "$heard = $heard + $new")
    fresh = ", fresh_start=True" if team.policy.kind == "magentic_one" else ""
    steps.add(
        "EXE",
        f"$turn:dict = {helper('take_turn')}(heard=$heard, chair={literal(chair)}, agents=$agents{fresh})",
    )
    body = StepList()
    body.jump("listen")
    steps.branch('If not $turn["mine"]', body)
    if fresh:
        body = StepList()
        body.add("EXE", "$history = []")
        steps.branch('If $turn["fresh"]', body)
    steps.add("EXE", '$heard = $turn["rest"]')
    steps.add("EXE", '$input:list = $turn["messages"]')
    extra: list[Playbook] = []
    notes: list[str] = []
    if member.kind is MemberKind.PYTHON:
        steps.add("EXE", f"$reply:dict = {REPLY_PLAYBOOK}(new_messages=$input)")
        extra.append(_reply_playbook(team, member, helper("agent_reply"), "new_messages"))
    elif member.kind is MemberKind.USER:
        steps.add("EXE", f"$reply:dict = {REPLY_PLAYBOOK}(new_messages=$input)")
        extra.append(user_reply_playbook(member, helper))
    elif member.kind is MemberKind.AG2_PYTHON:
        steps.add("EXE", "$history = $history + $input")
        steps.add("EXE", f"$reply:dict = {REPLY_PLAYBOOK}(messages=$history)")
        extra.append(_reply_playbook(team, member, helper("ag2_reply"), "messages"))
    elif member.kind is MemberKind.LLM and team.framework == "ag2":
        steps.add("EXE", "$history = $history + $input")
        steps.add("EXE", f"$reply:dict = {REPLY_PLAYBOOK}(messages=$history)")
        extra.append(_reply_playbook(team, member, helper("ag2_reply"), "messages", model=True))
        extra.extend(ag2_playbooks(member, parts.namer, helper))
    elif member.kind is MemberKind.LLM:
        steps.add("EXE", "$history = $history + $input")
        steps.add("EXE", f"$reply:dict = {RESPOND_PLAYBOOK}(conversation=$history)")
        extra.extend(assistant_playbooks(team, member, parts.namer, helper))
    else:
        steps.add("EXE", f"{helper('unsupported')}(reason={literal(member.reason)})")
        steps.add("EXE", f'$reply:dict = {{"source": {literal(member.name)}, "content": None}}')
    body = StepList()
    body.add("EXE", "$history = $history + [$reply]")
    steps.branch('If $reply["content"] != None', body)
    steps.add("EXE", f"$to:str = {literal('meeting @' + chair)}")
    body = StepList()
    body.add("EXE", f'$to = {literal("meeting @" + chair + " @")} + $names[$reply["handoff"]]')
    steps.branch('If "handoff" in $reply and $reply["handoff"] in $names', body)
    body = StepList()
    body.add("EXE", f"$to = {literal('meeting @' + chair + ' @human')}")
    steps.branch('If "handoff" in $reply and $reply["handoff"] not in $names', body)
    steps.add("EXE", f"$text:str = {helper('meeting_text')}(reply=$reply, chair={literal(chair)})")
    steps.add("QUE", "Say($to, $text)")
    steps.jump("listen")
    how = {
        MemberKind.PYTHON: "its turn runs the live agent (`on_messages_stream`) on what it heard since its last turn",
        MemberKind.AG2_PYTHON: "its turn runs the live agent (`a_generate_reply`) on the whole conversation",
        MemberKind.LLM: f"its turn is {RESPOND_PLAYBOOK}, which the model executes with the agent's system message",
        MemberKind.USER: "its turn asks the run's user, as AutoGen's UserProxyAgent asks at the console",
        MemberKind.UNSUPPORTED: f"it cannot take a turn: {member.reason}",
    }[member.kind]
    meeting = Playbook(
        name=MEETING_PLAYBOOK,
        returns="None",
        description=safe_description(
            f"{member.name} in the group chat: it listens in the meeting and answers the chair when given the "
            f"turn; {how}."
        ),
        metadata=Metadata(meeting=True),
        steps=steps.build(),
        notes=numbered_notes(notes),
    )
    parts.main.append(meeting)
    parts.playbooks.extend(extra)
    return parts.build()


def _reply_playbook(
    team: Team, member: Member, helper: str, parameter: str, *, model: bool = False
) -> Playbook:
    steps = StepList()
    ask = ", model=True" if model else ""
    steps.add(
        "EXE",
        f"$reply:dict = {helper}(messages=${parameter}, team={literal(team.source)}, agent={literal(member.name)}{ask})",
    )
    if model:
        body = StepList()
        body.add("EXE", f"$reply = {RESPOND_PLAYBOOK}(conversation=${parameter})")
        steps.branch('If "ask_model" in $reply', body)
    steps.add("RET", "$reply")
    what = "since its last turn" if parameter == "new_messages" else "so far"
    how = (
        "its reply functions (human input, tool and code execution, its own) run in ag2, and when they leave the "
        f"answer to the model, {RESPOND_PLAYBOOK} writes it"
        if model
        else "the live agent's answer"
    )
    return Playbook(
        name=REPLY_PLAYBOOK,
        parameters=(Parameter(name=parameter, type="list"),),
        returns="dict",
        description=safe_description(
            f"{member.name}'s turn: {how} to the conversation {what} (transcript entries), as "
            '{"source": ..., "content": ..., "handoff": ...}.'
        ),
        metadata=Metadata(public=True),
        steps=steps.build(),
    )
