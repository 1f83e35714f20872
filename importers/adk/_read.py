"""Reading a live ADK agent tree (or a Workflow) into the importer's model.

Everything comes from the objects' own fields: an agent's class, `sub_agents`, `tools`, `instruction`
(and the root's `global_instruction`, `static_instruction`), `output_key`, `include_contents`, the
transfer flags, callbacks and `max_iterations`; a tool's declaration (what the model is told about it)
and function; a workflow's `graph.nodes` and `graph.edges`. Nothing is dumped or re-parsed.
"""

from __future__ import annotations

from typing import Any

from importers import ImportTargetError
from importers.adk._diagnostics import (
    AGENT_FEATURE,
    APP_FEATURE,
    LLM_INSIDE_ADK,
    MODEL_CALLBACK,
    NO_SOURCE,
    NODE_FEATURE,
    TOOL_CALLBACK,
    UNSUPPORTED_AGENT,
    UNSUPPORTED_TOOL,
)
from importers.adk._model import (
    Agent,
    AgentKind,
    Edge,
    Node,
    NodeKind,
    Tool,
    Workflow,
)
from importers.adk._read_tools import code_names
from importers.common.diagnostics import Findings
from importers.common.paths import class_path, import_path

START = "__START__"
"""ADK's name of a workflow's start node."""
_MODEL_CALLBACKS = ("before_model_callback", "after_model_callback", "on_model_error_callback")
_TOOL_CALLBACKS = ("before_tool_callback", "after_tool_callback", "on_tool_error_callback")
_TASK_MODE = "task"


def root_of(value: Any, *, subject: str, findings: Findings) -> Any:
    """The agent or workflow to import: `value` itself, or an App's root agent (reporting the App's
    plugins and run-time configuration, which the program does not apply)."""
    from google.adk.agents import BaseAgent
    from google.adk.apps import App
    from google.adk.workflow import Workflow as AdkWorkflow

    if isinstance(value, App):
        if value.root_agent is None:
            raise ImportTargetError(f"{subject}: App {value.name!r} has no root_agent")
        kept = [
            name
            for name in ("plugins", "events_compaction_config", "context_cache_config", "resumability_config")
            if getattr(value, name, None)
        ]
        if kept:
            findings.add(
                APP_FEATURE,
                f"app {value.name!r}, field {', '.join(kept)}",
                "the imported program runs the root agent alone: plugins and the App's run-time "
                "configuration are not applied",
            )
        value = value.root_agent
    if not isinstance(value, (BaseAgent, AdkWorkflow)):
        raise ImportTargetError(
            f"{subject}: expected an ADK agent, a Workflow or an App, got a {type(value).__name__}"
        )
    return value


class TreeReader:
    """Reads one agent tree; `has_source` says whether ADK-run parts can be found again at run time."""

    __slots__ = ("callbacks", "findings", "has_source")

    def __init__(self, findings: Findings, *, has_source: bool) -> None:
        self.findings = findings
        self.has_source = has_source
        self.callbacks = False
        """Whether an agent of the tree has agent callbacks (which may rewrite any agent's instruction)."""

    def tree(self, root: Any) -> Agent:
        """The model of the whole tree under `root`."""
        self.callbacks = any(
            getattr(value, f"{when}_agent_callback", None) is not None
            for value in _tree(root)
            for when in ("before", "after")
        )
        return self.agent(root)

    # --- agents ----------------------------------------------------------------------------------

    def agent(self, value: Any, parent_path: str = "", *, node: bool = False) -> Agent:
        """The model of an agent or workflow (and everything under it); `node`: it is a workflow's node
        (whose node settings `node()` reports)."""
        from google.adk.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
        from google.adk.workflow import Workflow as AdkWorkflow

        path = f"{parent_path}/{value.name}" if parent_path else value.name
        common = {
            "name": value.name,
            "path": path,
            "adk_class": class_path(value),
            "description": str(getattr(value, "description", "") or ""),
        }
        steps = isinstance(value, AdkWorkflow) or any(
            _runs_like(value, base) for base in (LlmAgent, SequentialAgent, ParallelAgent, LoopAgent)
        )
        if steps:
            self._step_agent_features(value, f"agent {value.name!r}", node=node)
        if isinstance(value, AdkWorkflow):
            return self._workflow(value, path, common)
        if _runs_like(value, LlmAgent):
            return self._llm(value, path, common)
        for base, kind in (
            (SequentialAgent, AgentKind.SEQUENTIAL),
            (ParallelAgent, AgentKind.PARALLEL),
            (LoopAgent, AgentKind.LOOP),
        ):
            if _runs_like(value, base):
                return Agent(
                    **common,
                    kind=kind,
                    children=tuple(self.agent(child, path) for child in value.sub_agents),
                    callbacks=self._callbacks(value, path),
                    max_iterations=getattr(value, "max_iterations", None) if kind is AgentKind.LOOP else None,
                )
        return self._custom(value, path, common)

    def _step_agent_features(self, value: Any, subject: str, *, node: bool) -> None:
        """Settings of an agent whose body is PAL steps that ADK would apply around it."""
        if getattr(value, "state_schema", None) is not None:
            self.findings.add(
                AGENT_FEATURE,
                f"{subject}, field state_schema",
                "state writes are not checked against the schema",
            )
        if getattr(value, "parallel_worker", None):
            self.findings.add(
                AGENT_FEATURE,
                f"{subject}, field parallel_worker",
                "parallel worker mode is not applied: the agent runs once on its input",
            )
        kept = [name for name in ("retry_config", "timeout") if getattr(value, name, None) is not None]
        if kept and not node:
            self.findings.add(
                NODE_FEATURE,
                f"{subject}, field {', '.join(kept)}",
                "the agent runs as PAL steps, so ADK's retry and timeout are not applied",
            )

    def _callbacks(self, value: Any, path: str) -> tuple[str, ...]:
        found = tuple(
            when for when in ("before", "after") if getattr(value, f"{when}_agent_callback", None) is not None
        )
        if found and not self.has_source:
            self._no_source(f"agent {value.name!r}, field {found[0]}_agent_callback", "its agent callbacks")
            return ()
        return found

    def _no_source(self, subject: str, what: str) -> None:
        self.findings.add(
            NO_SOURCE,
            subject,
            f"{what} run in ADK at run time and are found again from the program's source, but this tree "
            "was imported from an object, not module:attr or a config file; import it by its path",
        )

    def _custom(self, value: Any, path: str, common: dict[str, Any]) -> Agent:
        from google.adk.agents import BaseAgent, LlmAgent

        subject = f"agent {value.name!r}"
        module = type(value).__module__
        if type(value).__name__ == "RemoteA2aAgent" or module.startswith("google.adk.a2a"):
            reason = "it is a remote A2A agent, reached over the network; PAL does not call A2A agents"
            self.findings.add(UNSUPPORTED_AGENT, subject, reason)
            return Agent(**common, kind=AgentKind.UNSUPPORTED, reason=f"{UNSUPPORTED_AGENT.code} {reason}")
        if type(value)._run_async_impl is BaseAgent._run_async_impl:
            reason = f"its class {type(value).__name__} does not implement _run_async_impl"
            self.findings.add(UNSUPPORTED_AGENT, subject, reason)
            return Agent(**common, kind=AgentKind.UNSUPPORTED, reason=f"{UNSUPPORTED_AGENT.code} {reason}")
        if not self.has_source:
            self._no_source(subject, "custom agents")
            return Agent(
                **common,
                kind=AgentKind.UNSUPPORTED,
                reason=f"{NO_SOURCE.code} the program has no source to run it from",
            )
        inner = [name for name in _descendants(value) if isinstance(name, LlmAgent)]
        if inner:
            names = ", ".join(repr(agent.name) for agent in inner)
            self.findings.add(
                LLM_INSIDE_ADK,
                subject,
                f"it runs its sub-agents itself, and LLM agents among them ({names}) call the model ADK "
                "gives them, not the PAL run's model",
            )
        return Agent(**common, kind=AgentKind.CUSTOM)

    # --- LLM agents ------------------------------------------------------------------------------

    def _llm(self, value: Any, path: str, common: dict[str, Any]) -> Agent:
        subject = f"agent {value.name!r}"
        for field in (*_MODEL_CALLBACKS, *_TOOL_CALLBACKS):
            if getattr(value, field, None):
                code = MODEL_CALLBACK if field in _MODEL_CALLBACKS else TOOL_CALLBACK
                what = "model" if code is MODEL_CALLBACK else "tool"
                self.findings.add(
                    code,
                    f"{subject}, field {field}",
                    f"PAL's model turns and tool calls are not ADK's, so this {what} callback is not run",
                )
        self._llm_features(value, subject)
        template, dynamic = self._instruction(value, subject)
        model = value.model if isinstance(value.model, str) else getattr(value.model, "model", "")
        return Agent(
            **common,
            kind=AgentKind.LLM,
            children=tuple(self.agent(child, path) for child in value.sub_agents),
            callbacks=self._callbacks(value, path),
            instruction=template,
            dynamic_instruction=dynamic,
            tools=tuple(tool for item in value.tools for tool in self.tools(item, value, path)),
            output_key=value.output_key,
            output_schema=self._output_schema(value, subject),
            include_contents=value.include_contents,
            transfer_targets=_transfer_targets(value),
            model=str(model or ""),
        )

    def _output_schema(self, value: Any, subject: str) -> dict[str, Any] | None:
        """ADK's `output_schema` as the JSON Schema of the reply (the react playbook's `returns_schema`)."""
        schema = getattr(value, "output_schema", None)
        if schema is None:
            return None
        to_schema = getattr(schema, "model_json_schema", None)
        if not callable(to_schema):
            self.findings.add(
                AGENT_FEATURE,
                f"{subject}, field output_schema",
                f"{schema!r} is not a pydantic model; the reply is not checked against it",
            )
            return None
        return to_schema()

    def _llm_features(self, value: Any, subject: str) -> None:
        for field, message in (
            ("input_schema", "the arguments of the agent used as a tool are not checked against the schema"),
            ("planner", "PAL's turns are planned by the contract, not by an ADK planner"),
            ("generate_content_config", "sampling settings are the PAL run's, not these"),
        ):
            if getattr(value, field, None) is not None:
                self.findings.add(AGENT_FEATURE, f"{subject}, field {field}", message)
        if getattr(value, "code_executor", None) is not None:
            self.findings.add(
                UNSUPPORTED_TOOL,
                f"{subject}, field code_executor",
                "PAL does not execute the code a model writes; the agent runs without a code executor",
            )
        mode = getattr(value, "mode", None)
        if mode is not None and str(getattr(mode, "value", mode)) == _TASK_MODE:
            self.findings.add(
                AGENT_FEATURE,
                f"{subject}, field mode",
                "task mode (several turns until the model calls finish_task) runs as one turn that returns its "
                "reply",
            )

    def _instruction(self, value: Any, subject: str) -> tuple[str | None, str]:
        """(template, "") when the instruction is text the run may keep, else (None, what computes it at run
        time): an instruction provider, an instruction that agent callbacks of the tree may rewrite, or one
        holding today's date (computed when the module was imported: the run computes it again)."""
        root = value.root_agent
        parts: list[Any] = []
        if getattr(root, "global_instruction", None):
            parts.append(root.global_instruction)
        static = getattr(value, "static_instruction", None)
        if static:
            parts.append(static if isinstance(static, str) else None)
            if _non_text_parts(static):
                self.findings.add(
                    AGENT_FEATURE,
                    f"{subject}, field static_instruction",
                    f"its {', '.join(_non_text_parts(static))} parts are not shown to the model (its text is)",
                )
        if value.instruction:
            parts.append(value.instruction)
        texts = [part for part in parts if isinstance(part, str)]
        if len(texts) == len(parts) and not self.callbacks and not _holds_todays_date("\n".join(texts)):
            return "\n\n".join(parts), ""
        if not self.has_source:
            self._no_source(f"{subject}, field instruction", "instructions computed at run time")
            return "\n\n".join(texts), ""
        provider = next((part for part in parts if callable(part)), None)
        if provider is not None:
            where, _ = import_path(provider)
            return None, f"`{where}`" if where else "a function of the agent"
        if self.callbacks:
            return None, "the agent as its callbacks leave it"
        return None, "the agent's module (its text holds the date it was imported on)"

    # --- tools -----------------------------------------------------------------------------------

    def tools(self, item: Any, owner: Any, path: str) -> list[Tool]:
        """The tools one entry of an agent's `tools` list stands for (importers.adk._read_tools)."""
        from importers.adk._read_tools import read_tools

        return read_tools(self, item, owner, path)

    # --- workflows -------------------------------------------------------------------------------

    def _workflow(self, value: Any, path: str, common: dict[str, Any]) -> Agent:
        graph = value.graph
        nodes: dict[str, Node] = {}
        for node in graph.nodes if graph is not None else ():
            if node.name == START:
                continue
            nodes[node.name] = self.node(node, path)
        edges = tuple(
            Edge(source=edge.from_node.name, target=edge.to_node.name, routes=_routes(edge.route))
            for edge in (graph.edges if graph is not None else ())
        )
        return Agent(**common, kind=AgentKind.WORKFLOW, workflow=Workflow(nodes=nodes, edges=edges))

    def node(self, value: Any, workflow_path: str) -> Node:
        """The model of one workflow node."""
        from google.adk.agents import BaseAgent, LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
        from google.adk.workflow import FunctionNode, JoinNode
        from google.adk.workflow import Workflow as AdkWorkflow

        path = f"{workflow_path}/{value.name}"
        subject = f"node {path!r}"
        if isinstance(value, JoinNode):
            return Node(name=value.name, kind=NodeKind.JOIN, path=path)
        standard = isinstance(value, AdkWorkflow) or any(
            _runs_like(value, base) for base in (LlmAgent, SequentialAgent, ParallelAgent, LoopAgent)
        )
        if standard:
            kept = [name for name in ("retry_config", "timeout") if getattr(value, name, None) is not None]
            if kept:
                self.findings.add(
                    NODE_FEATURE,
                    f"{subject}, field {', '.join(kept)}",
                    "the agent runs as PAL steps, so ADK's retry and timeout are not applied",
                )
            return Node(
                name=value.name,
                kind=NodeKind.AGENT,
                path=path,
                agent=self.agent(value, workflow_path, node=True),
            )
        if isinstance(value, BaseAgent) and type(value).__name__ == "RemoteA2aAgent":
            agent = self._custom(
                value, path, {"name": value.name, "path": path, "adk_class": class_path(value)}
            )
            return Node(name=value.name, kind=NodeKind.UNSUPPORTED, path=path, reason=agent.reason)
        if not self.has_source:
            self._no_source(subject, "workflow nodes")
            return Node(
                name=value.name,
                kind=NodeKind.UNSUPPORTED,
                path=path,
                reason=f"{NO_SOURCE.code} no source to run it from",
            )
        function = getattr(value, "_func", None) if isinstance(value, FunctionNode) else None
        asks_user = _yields_request_input(function)
        if asks_user and value.rerun_on_resume:
            self.findings.add(
                NODE_FEATURE,
                f"{subject}, field rerun_on_resume",
                "it asks the user (RequestInput) and reruns when resumed; the program takes the user's answer "
                "as the node's output without running it again",
            )
        return Node(name=value.name, kind=NodeKind.ADK, path=path, asks_user=asks_user)


# --- helpers -----------------------------------------------------------------------------------------


def _non_text_parts(static: Any) -> list[str]:
    """The kinds of a static instruction's parts that are not text (`inline_data`, `file_data`, ...)."""
    if isinstance(static, str):
        return []
    if isinstance(static, (list, tuple)):
        return list(dict.fromkeys(kind for item in static for kind in _non_text_parts(item)))
    parts = getattr(static, "parts", None)
    if parts is not None:
        return _non_text_parts(list(parts))
    if getattr(static, "text", None) is not None:
        return []
    fields = getattr(static, "model_fields_set", None) or ()
    return [field for field in fields if field != "text"] or [type(static).__name__]


def _tree(value: Any) -> list[Any]:
    """`value` and every agent and node under it (sub-agents, AgentTool agents, workflow nodes)."""
    from importers.adk.session import children

    found = [value]
    for child in children(value):
        found.extend(_tree(child))
    return found


def _holds_todays_date(text: str) -> bool:
    """Whether `text` holds today's date as a program computing it at import time writes it."""
    import datetime

    today = datetime.date.today()
    forms = {
        today.isoformat(),
        today.strftime("%m/%d/%Y"),
        today.strftime("%d/%m/%Y"),
        today.strftime("%d.%m.%Y"),
        today.strftime("%B %d, %Y"),
        today.strftime("%B %-d, %Y"),
        today.strftime("%d %B %Y"),
        today.strftime("%-d %B %Y"),
        today.strftime("%b %d, %Y"),
        today.strftime("%b %-d, %Y"),
    }
    return any(form in text for form in forms)


def _runs_like(value: Any, base: type) -> bool:
    """Whether `value` is a `base` that runs as `base` does (a subclass may override the run)."""
    return isinstance(value, base) and type(value)._run_async_impl is base._run_async_impl


def _descendants(value: Any) -> list[Any]:
    found: list[Any] = []
    for child in getattr(value, "sub_agents", None) or ():
        found.append(child)
        found.extend(_descendants(child))
    return found


def _transfer_targets(value: Any) -> tuple[str, ...]:
    """The agents an LLM agent may transfer to, by ADK's own rule (sub-agents, then the parent and the
    peers when the parent is an LLM agent and the flags allow)."""
    from google.adk.flows.llm_flows.extensions._agent_transfer import _get_transfer_targets

    return tuple(dict.fromkeys(agent.name for agent in _get_transfer_targets(value)))


def _routes(route: Any) -> tuple[Any, ...] | None:
    if route is None:
        return None
    return tuple(route) if isinstance(route, list) else (route,)


def _yields_request_input(function: Any) -> bool:
    """Whether a node function uses ADK's `RequestInput` (it then waits for the user)."""
    code = getattr(function, "__code__", None)
    return code is not None and any("RequestInput" in names for names in code_names(code))


__all__ = ["START", "TreeReader", "root_of"]
