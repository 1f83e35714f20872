"""What every way into a run shares: which playbook a caller means, what a call gives back, and which
program a thread runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pal_core.ir import Agent, Playbook, Program
from runtime.errors import CallError
from runtime.store import ProgramRef


@dataclass(frozen=True, slots=True, kw_only=True)
class CallOutcome:
    """What one call of a playbook produced (from Python, a framework node or tool, an MCP tool call)."""

    value: Any
    """The playbook's return value (None when it returns nothing or yields exit)."""
    said_to_user: tuple[str, ...] = ()
    """What the playbook said to the user during the call (`Say(user, ...)`), in order."""
    thread: str | None = None
    """The thread the call was recorded in; None when it was not recorded (no store)."""


def resolve_playbook(program: Program, agent: str | None, playbook: str | None) -> tuple[Agent, Playbook]:
    """The agent and playbook a caller means: `pal run --input`, `run_playbook`, the exporters, sessions.

    `playbook` is `Playbook` or `Agent.Playbook`; `agent` names the agent (and must agree with a
    qualified `playbook`). Without a playbook name: the agent's (or the program's) first BGN-triggered
    playbook, else its first public one. CallError says what exists when nothing matches.
    """
    if playbook and "." in playbook:
        qualifier, _, playbook = playbook.rpartition(".")
        if agent is not None and agent != qualifier:
            raise CallError(f"playbook {qualifier}.{playbook} is not in agent {agent}")
        agent = qualifier
    candidates = program.agents
    if agent is not None:
        chosen = program.agent(agent)
        if chosen is None:
            known = ", ".join(a.name for a in program.agents) or "none"
            raise CallError(f"the program has no agent {agent} (agents: {known})")
        candidates = (chosen,)
    if playbook:
        for candidate in candidates:
            found = candidate.playbook(playbook)
            if found is not None:
                return candidate, found
        where = f"agent {agent}" if agent is not None else "the program"
        known = ", ".join(p.name for a in candidates for p in a.playbooks) or "none"
        raise CallError(f"{where} has no playbook {playbook} (playbooks: {known})")
    for wanted in (
        lambda p: any(trigger.code == "BGN" for trigger in p.triggers),
        lambda p: p.public,
    ):
        for candidate in candidates:
            for found in candidate.playbooks:
                if wanted(found):
                    return candidate, found
    where = f"agent {agent}" if agent is not None else "the program"
    raise CallError(f"{where} has no BGN-triggered or public playbook to call; name one with playbook=")


def program_ref(program: Program) -> ProgramRef:
    """The program a thread runs, so a resumed thread can refuse a program that changed: its file (absolute
    path, SHA-256 of its bytes), or for a program built in memory its canonical PAL text."""
    source = program.source
    if source and Path(source).is_file():
        return ProgramRef.of_file(source)
    from pal_core.writer import write

    return ProgramRef.of_source(write(program), path=source or "<program>")
