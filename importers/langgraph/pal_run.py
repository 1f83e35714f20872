"""What the LangGraph helpers read of the PAL run they are called in, in one place.

The helpers of `pal.langgraph` run as Python playbooks: the runtime sets `runtime.python_api.current_execution`
around each call, which is how Python code reaches the agent that called it (as a python block's
`await OtherPlaybook(...)` does). From it the helpers take the thread the run is recorded in (a node's
`thread_id`), ask the run's model (a node's chat model is served by it: its budget, its recorder, its
trace), say what a node streams to the user, and call the agent's playbooks (a ToolNode's tool calls).
Nothing else of the runtime is used, so a change there is a change here only.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pal_core.errors import PalError
from runtime.models.base import ModelRequest, ModelResponse
from runtime.python_api import current_execution


class NotInRun(PalError):
    """A helper that needs the PAL run was called outside a running playbook (a user error: call it from
    an imported program)."""


def execution() -> Any:
    """The Execution of the playbook call running now (NotInRun outside one)."""
    found = current_execution.get()
    if found is None:
        raise NotInRun(
            "this LangGraph helper works only inside a running PAL program (pal run, run_playbook)"
        )
    return found


def execution_or_none() -> Any:
    """The Execution of the playbook call running now, or None outside one."""
    return current_execution.get()


def thread_id(running: Any) -> str:
    """The id of the thread the run is recorded in; a new id for a run nobody records (each call its own)."""
    recorded = running.services.recorder.thread_id if running is not None else ""
    return str(recorded) if recorded else f"pal-{uuid.uuid4().hex[:12]}"


def agent_name(running: Any) -> str:
    """The class name of the agent whose playbook is running."""
    return str(running.agent.klass)


def binds_support(running: Any, name: str) -> bool:
    """Whether the running agent binds helpers of support module `name` (`pal.langgraph:...`): it was
    imported from that framework."""
    prefix = f"pal.{name}:"
    return any((playbook.metadata.python or "").startswith(prefix) for playbook in running.agent.ir.playbooks)


def agent_metadata(running: Any) -> Mapping[str, Any]:
    """The extra metadata of the running agent's class (`langgraph: {...}` for an imported graph)."""
    return running.agent.ir.metadata.extra


async def ask_model(running: Any, request: ModelRequest) -> ModelResponse:
    """The run's model's answer to `request`, asked for the running agent: it counts against the run's
    budget, a durable run records it, and the trace shows it."""
    _, response = await running.services.call_model(request, running.agent)
    return response


def model_calls(running: Any) -> int:
    """Model calls the budget the running call spends has counted so far (react rounds are told apart by it)."""
    return int(running.services.budget().limiter.calls)


def takes_grammar(running: Any) -> bool:
    """Whether the run's model decodes under a grammar (the bundled local model: it shapes its turns)."""
    return running.services.shaping is not None


def limits(running: Any) -> Any:
    """The run's RunLimits (answer tokens, temperature, seed, retries)."""
    return running.services.limits


async def say_to_user(running: Any, text: str) -> None:
    """Say `text` to the user as the running agent (what a node streams reaches the run's output)."""
    await running.say("user", text)


async def call_playbook(running: Any, name: str, arguments: Mapping[str, Any]) -> Any:
    """Call one of the running agent's playbooks by name, as a PAL call (traced, budgeted, recorded)."""
    return await running.call_playbook(name, [], dict(arguments))


def variable(running: Any, name: str, default: Any = None) -> Any:
    """The running agent's variable `$name` (`default` when it is not set)."""
    variables = running.agent.state.variables
    return variables.get(name, default)


__all__ = [
    "NotInRun",
    "agent_metadata",
    "agent_name",
    "ask_model",
    "binds_support",
    "call_playbook",
    "execution",
    "execution_or_none",
    "limits",
    "model_calls",
    "say_to_user",
    "takes_grammar",
    "thread_id",
    "variable",
]
