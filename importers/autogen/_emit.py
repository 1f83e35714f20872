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
from importers.common.emit import AgentParts, SupportModule, numbered_notes, tool_playbook
from importers.common.naming import Namer, camel_case, safe_description
from importers.common.steps import StepList, literal
from pal_core.ir import Agent, Metadata, Parameter, Playbook, Program, Trigger

ENTRY_PLAYBOOK = "Run"
"""The chair's playbook that runs the chat on a task and returns the transcript."""
RESPOND_PLAYBOOK = "Respond"
"""An LLM participant's playbook: the model writes its next message."""
REPLY_PLAYBOOK = "Reply"
"""A participant's public playbook running the live agent: its turn, callable from outside the meeting too
(`exporters.autogen.as_autogen_agent(program, playbook="Alice.Reply")` puts it back in an AutoGen team)."""
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
    elif member.kind is MemberKind.AG2_PYTHON:
        steps.add("EXE", "$history = $history + $input")
        steps.add("EXE", f"$reply:dict = {REPLY_PLAYBOOK}(messages=$history)")
        extra.append(_reply_playbook(team, member, helper("ag2_reply"), "messages"))
    elif member.kind is MemberKind.LLM:
        steps.add("EXE", "$history = $history + $input")
        source = literal(member.name)
        if member.handoffs:
            steps.add("EXE", f"$answer:dict = {RESPOND_PLAYBOOK}(conversation=$history)")
            steps.add("EXE", f'$reply:dict = {{"source": {source}, "content": $answer["content"]}}')
            body = StepList()
            body.add(
                "EXE",
                f'$reply = {{"source": {source}, "content": $answer["content"], "handoff": $answer["handoff"]}}',
            )
            steps.branch('If "handoff" in $answer', body)
        else:
            steps.add("EXE", f"$answer:str = {RESPOND_PLAYBOOK}(conversation=$history)")
            steps.add("EXE", f'$reply:dict = {{"source": {source}, "content": $answer}}')
        extra.extend(_llm_playbooks(member, parts.namer))
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
    steps.add("EXE", f"$text:str = {literal('@' + chair)}")
    body = StepList()
    body.add("EXE", '$text = $reply["content"]')
    steps.branch('If $reply["content"] != None', body)
    steps.add("QUE", "Say($to, $text)")
    steps.jump("listen")
    how = {
        MemberKind.PYTHON: "its turn runs the live agent (`on_messages_stream`) on what it heard since its last turn",
        MemberKind.AG2_PYTHON: "its turn runs the live agent (`a_generate_reply`) on the whole conversation",
        MemberKind.LLM: f"its turn is {RESPOND_PLAYBOOK}, which the model executes with the agent's system message",
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


def _reply_playbook(team: Team, member: Member, helper: str, parameter: str) -> Playbook:
    steps = StepList()
    steps.add(
        "EXE",
        f"$reply:dict = {helper}(messages=${parameter}, team={literal(team.source)}, agent={literal(member.name)})",
    )
    steps.add("RET", "$reply")
    what = "since its last turn" if parameter == "new_messages" else "so far"
    return Playbook(
        name=REPLY_PLAYBOOK,
        parameters=(Parameter(name=parameter, type="list"),),
        returns="dict",
        description=safe_description(
            f"{member.name}'s turn: the live agent's answer to the conversation {what} (transcript entries), as "
            '{"source": ..., "content": ..., "handoff": ...}.'
        ),
        metadata=Metadata(public=True),
        steps=steps.build(),
    )


def _llm_playbooks(member: Member, namer: Namer) -> list[Playbook]:
    notes = [
        "$conversation is the chat so far: each entry's source is who spoke, content what they said; the "
        f"entries from {member.name} are yours.",
        "Write your next message in the chat and return it as text with Return[...]; call your tools (the "
        "other playbooks) first when they help, and return what they give when that is the answer.",
    ]
    if member.handoffs:
        notes[1] = (
            'Write your next message in the chat and return it as {"content": <your message>} with Return[...]; '
            "call your tools (the other playbooks) first when they help."
        )
        notes.append(
            "To hand the conversation to another agent, call its TransferTo playbook and return what it returns."
        )
    respond = Playbook(
        name=RESPOND_PLAYBOOK,
        parameters=(Parameter(name="conversation", type="list"),),
        returns="dict" if member.handoffs else "str",
        description=safe_description(member.system_message or "You are a helpful AI assistant."),
        metadata=Metadata(execution_mode="react"),
        notes=numbered_notes(notes),
    )
    # A tool or hand-off named like a playbook the agent already has (`respond`, `take_turn`) gets a suffix.
    tools = [tool_playbook(tool, name=namer.take(camel_case(tool.name), "Tool")) for tool in member.tools]
    transfers = []
    for handoff in member.handoffs:
        steps = StepList()
        steps.add("RET", literal({"handoff": handoff.target, "content": handoff.message}))
        transfers.append(
            Playbook(
                name=namer.take(camel_case(handoff.name), "Handoff"),
                returns="dict",
                description=safe_description(
                    handoff.description or f"Hand the conversation to {handoff.target}."
                ),
                steps=steps.build(),
            )
        )
    return [respond, *tools, *transfers]
