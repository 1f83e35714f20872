"""The public Python API of the runtime.

result = await run_program("prog.pal", model="openai/gpt-4o-mini", messages=["my order is 1234"])
value = await run_playbook(program, "Agent.Playbook", model=ScriptedModel([...]), x=1)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pal_core.ir import Playbook, Program
from pal_core.messaging import StreamObserver
from runtime.errors import CallError, ProgramError
from runtime.execution import Execution
from runtime.humans import HumanInput, NoHuman, ScriptedHuman
from runtime.inputs import bind_input, check_arguments
from runtime.loader import load
from runtime.models.base import Model
from runtime.program_run import ProgramRun, RunLimits, RunResult
from runtime.trace import Tracer

__all__ = [
    "ProgramRun",
    "RunLimits",
    "RunResult",
    "bind_input",
    "entry_playbook",
    "load",
    "run_playbook",
    "run_program",
]


def _program(program: Program | str | Path) -> Program:
    return program if isinstance(program, Program) else load(program)


def _model(model: Model | str | None) -> Model | None:
    if model is None or not isinstance(model, str):
        return model
    from runtime.models.registry import resolve_model

    return resolve_model(model)


async def run_program(
    program: Program | str | Path,
    *,
    model: Model | str | None = None,
    messages: Iterable[str] = (),
    human: HumanInput | None = None,
    limits: RunLimits | None = None,
    tracer: Tracer | None = None,
    observers: tuple[StreamObserver, ...] = (),
) -> RunResult:
    """Run a whole program (BGN playbooks, then message loops) until it exits or goes idle."""
    run = ProgramRun(
        _program(program),
        model=_model(model),
        limits=limits,
        human=human or ScriptedHuman(messages),
        tracer=tracer,
        observers=observers,
    )
    return await run.run()


def entry_playbook(program: Program, name: str | None = None) -> tuple[str, Playbook]:
    """The playbook `pal run --input` calls: by name (`Playbook` or `Agent.Playbook`), else the first
    BGN-triggered one, else the first public one. Returns (agent name, playbook)."""
    if name:
        agent_name, dot, playbook_name = name.rpartition(".")
        for agent in program.agents:
            if dot and agent.name != agent_name:
                continue
            playbook = agent.playbook(playbook_name)
            if playbook is not None:
                return agent.name, playbook
        raise CallError(f"no playbook {name} in the program")
    for predicate in (
        lambda p: any(trigger.code == "BGN" for trigger in p.triggers),
        lambda p: p.public,
    ):
        for agent in program.agents:
            for playbook in agent.playbooks:
                if predicate(playbook):
                    return agent.name, playbook
    raise CallError("the program has no BGN-triggered or public playbook to call; name one")


async def run_playbook(
    program: Program | str | Path,
    playbook: str | None = None,
    *args: Any,
    model: Model | str | None = None,
    messages: Iterable[str] | None = None,
    limits: RunLimits | None = None,
    tracer: Tracer | None = None,
    observers: tuple[StreamObserver, ...] = (),
    **kwargs: Any,
) -> Any:
    """Call one playbook in a fresh run (no BGN playbooks) and return its result.

    `playbook` is `Playbook` or `Agent.Playbook` (default: the entry playbook). The arguments are checked
    against its parameter types first (runtime.inputs: InputError names each bad one). Failures raise
    RunError, ProgramError or CallError; waiting for the user with no `messages` raises InputExhausted; a
    call past one of the budgets of `limits` (steps, seconds, model calls, value sizes) raises BudgetExceeded.
    """
    loaded = _program(program)
    agent_name, target = entry_playbook(loaded, playbook)
    names = [parameter.name for parameter in target.parameters]
    if len(args) > len(names):
        raise CallError(f"{target.name} takes {len(names)} argument(s), got {len(args)}")
    given = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key in given:
            raise CallError(f"{target.name} got two values for ${key}")
        given[key] = value
    arguments = check_arguments(target, given)
    run = ProgramRun(
        loaded,
        model=_model(model),
        limits=limits,
        human=ScriptedHuman(messages) if messages is not None else NoHuman(),
        tracer=tracer,
        observers=observers,
    )
    try:
        await run.start()
        run.start_loops()
        instance = await run.agent_instance(agent_name)
        if instance is None:
            raise ProgramError(f"agent {agent_name} could not be started")
        async with run.budget.bound():
            return await run.guard(Execution(instance).execute(target, [], arguments))
    finally:
        await run.shutdown()
