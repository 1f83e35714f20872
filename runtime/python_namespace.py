"""The names a python block sees besides the builtins: `agent`, the agent's other playbooks, other agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from runtime.python_api import current_execution, touch_call

if TYPE_CHECKING:
    from runtime.agent import AgentInstance


class _PlaybookProxy:
    """A callable standing for a playbook: `await FormatSummary(data)` runs it through the runtime."""

    def __init__(self, instance: AgentInstance, name: str) -> None:
        self._instance = instance
        self._name = name
        self.__name__ = name

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from runtime.execution import Execution

        touch_call()
        execution = current_execution.get()
        if execution is None or execution.agent is not self._instance:
            execution = Execution(self._instance)
        return await execution.call_playbook(self._name, list(args), kwargs)


class _AgentProxy:
    """`OtherAgent.Playbook(...)` from Python."""

    def __init__(self, instance: AgentInstance, agent_name: str) -> None:
        self._instance = instance
        self._agent_name = agent_name

    def __getattr__(self, playbook: str) -> _PlaybookProxy:
        if playbook.startswith("_"):
            raise AttributeError(playbook)
        return _PlaybookProxy(self._instance, f"{self._agent_name}.{playbook}")


class AgentView:
    """The `agent` object of python blocks: id, class name and state (`agent.state.variables["$x"]`)."""

    def __init__(self, instance: AgentInstance) -> None:
        self.id = instance.id
        self.klass = instance.klass
        self._instance = instance

    @property
    def state(self) -> Any:
        """The agent's state (`variables`, `artifacts`, `session_log`). A Python playbook of a durable run
        that reads or changes it is run again on resume rather than answered from the log."""
        touch_call()
        return self._instance.state


def namespace_for(instance: AgentInstance) -> dict[str, Any]:
    """Globals for the agent's python blocks (the blocks' own definitions replace same-named proxies)."""
    namespace: dict[str, Any] = {"agent": AgentView(instance)}
    for name in instance.playbooks:
        namespace[name] = _PlaybookProxy(instance, name)
    for other in instance.services.program.agents:
        if other.name != instance.klass and other.name.isidentifier():
            namespace[other.name] = _AgentProxy(instance, other.name)
    return namespace
