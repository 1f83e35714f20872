"""The public Python API of the runtime.

result = await run_program("prog.pal", model="openai/gpt-4o-mini", messages=["my order is 1234"])
value = await run_playbook(program, "Agent.Playbook", model=ScriptedModel([...]), x=1)

Both run through a session (runtime.session): with `thread` and `store` the run is durable, and calling
again with the same thread resumes it from its log; without, it lives in a memory store for the call.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pal_core.ir import Program
from pal_core.messaging import StreamObserver
from runtime.errors import CallError
from runtime.humans import HumanInput, NoHuman, ScriptedHuman
from runtime.inputs import bind_input, check_arguments
from runtime.loader import load
from runtime.models.base import Model
from runtime.program_run import ProgramRun, RunLimits, RunResult
from runtime.session import CallSession, ProgramSession, resolve_playbook
from runtime.store import Store
from runtime.trace import Tracer

__all__ = [
    "ProgramRun",
    "RunLimits",
    "RunResult",
    "bind_input",
    "load",
    "resolve_playbook",
    "run_playbook",
    "run_program",
]


def _program(program: Program | str | Path) -> Program:
    return program if isinstance(program, Program) else load(program)


async def run_program(
    program: Program | str | Path,
    *,
    model: Model | str | None = None,
    messages: Iterable[str] = (),
    human: HumanInput | None = None,
    limits: RunLimits | None = None,
    tracer: Tracer | None = None,
    observers: tuple[StreamObserver, ...] = (),
    store: Store | str | None = None,
    thread: str | None = None,
) -> RunResult:
    """Run a whole program (BGN playbooks, then message loops) until it exits, goes idle, fails, or waits
    for the user with no input left. `messages` answer its questions first, then `human`.

    `store` (a Store or a URL such as `sqlite:///runs.db`; default a memory store) and `thread` (an id;
    default a new one) make it a durable thread: run again with the same thread, in any process, it resumes
    from the last committed entry (runtime.session.ProgramSession)."""
    async with await ProgramSession.open(
        _program(program),
        store=store,
        thread=thread,
        model=model,
        limits=limits,
        human=human,
        tracer=tracer,
        observers=observers,
    ) as session:
        return await session.run(messages)


async def run_playbook(
    program: Program | str | Path,
    playbook: str | None = None,
    *args: Any,
    model: Model | str | None = None,
    messages: Iterable[str] | None = None,
    limits: RunLimits | None = None,
    tracer: Tracer | None = None,
    observers: tuple[StreamObserver, ...] = (),
    store: Store | str | None = None,
    thread: str | None = None,
    **kwargs: Any,
) -> Any:
    """Call one playbook in a fresh run (no BGN playbooks) and return its result.

    `playbook` is `Playbook` or `Agent.Playbook` (default: the entry playbook). The arguments are checked
    against its parameter types first (runtime.inputs: InputError names each bad one). Failures raise
    RunError, ProgramError or CallError; waiting for the user with no `messages` raises InputExhausted; a
    call past one of the budgets of `limits` (steps, seconds, model calls, value sizes) raises BudgetExceeded.

    With `thread` (and `store`), the call is the next call of that thread of calls: the thread's earlier
    calls are replayed from its log first, so its agents have the state they had (runtime.session.CallSession).
    """
    loaded = _program(program)
    agent, target = resolve_playbook(loaded, None, playbook)
    names = [parameter.name for parameter in target.parameters]
    if len(args) > len(names):
        raise CallError(f"{target.name} takes {len(names)} argument(s), got {len(args)}")
    given = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key in given:
            raise CallError(f"{target.name} got two values for ${key}")
        given[key] = value
    arguments = check_arguments(target, given)
    async with await CallSession.open(
        loaded,
        store=store,
        thread=thread,
        model=model,
        limits=limits,
        human=ScriptedHuman(messages) if messages is not None else NoHuman(),
        tracer=tracer,
        observers=observers,
    ) as session:
        outcome = await session.call(f"{agent.name}.{target.name}", arguments)
    return outcome.value
