"""Writing the PAL program of a graph model: agents, playbooks and the main playbook's steps.

The program of a graph is one agent. Its `Invoke($input:dict) -> dict` playbook (BGN) runs the graph:
`$state` holds the graph state; each superstep block calls the node playbooks and applies their updates
through the helpers of `importers.langgraph_support`; routes are CND branches on `$route`; cycles are
JMPs. A plain subgraph is a nested playbook of the same agent; an LLM agent (prebuilt ReAct agent or
`create_agent`) is an agent of its own with a react playbook `Run` and its tools as Python playbooks.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from importers import langgraph_support
from importers.langgraph._diagnostics import Findings
from importers.langgraph._flow import END_BLOCK, Block, Exit, ExitKind, Flow, Task, build_flow
from importers.langgraph._model import END, START, Graph, InputView, LlmAgent, Node, NodeKind, Router
from importers.langgraph._paths import camel_case, pal_type
from importers.langgraph._steps import StepList, literal
from pal_core.ir import Agent, Metadata, Note, Parameter, Playbook, PlaybookKind, Program, Trigger
from pal_core.validate import BUILTIN_PLAYBOOKS

SUPPORT_MODULE = "importers.langgraph_support"
"""Where the helper playbooks are bound."""
ENTRY_PLAYBOOK = "Invoke"
"""The playbook that runs a graph from its input state to its output state."""
AGENT_PLAYBOOK = "Run"
"""The react playbook of an LLM agent."""
_END_LABEL = "end"
_HEADER_LINE_RE = re.compile(r"(#|```)")
_HELPER_NAMES = {function: camel_case(function) for function in langgraph_support.HELPERS}
_RESERVED = frozenset({ENTRY_PLAYBOOK, AGENT_PLAYBOOK, *_HELPER_NAMES.values(), *BUILTIN_PLAYBOOKS})


class Namer:
    """Unique names: `base`, else `base + hint`, else `base + hint + 2`, ..."""

    __slots__ = ("_taken",)

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._taken = set(reserved)

    def take(self, base: str, hint: str) -> str:
        candidates = [base, f"{base}{hint}"] if not base.endswith(hint) else [base]
        for candidate in candidates:
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate
        number = 2
        while f"{base}{hint}{number}" in self._taken:
            number += 1
        self._taken.add(f"{base}{hint}{number}")
        return f"{base}{hint}{number}"


@dataclass(slots=True, kw_only=True)
class _AgentParts:
    """An agent being built."""

    name: str
    description: str
    metadata: Metadata
    namer: Namer = field(default_factory=lambda: Namer(_RESERVED))
    main: list[Playbook] = field(default_factory=list)
    playbooks: list[Playbook] = field(default_factory=list)
    helpers: dict[str, Playbook] = field(default_factory=dict)

    def helper(self, function: str) -> str:
        """The PAL name of helper `function`, adding its playbook on first use."""
        name = _HELPER_NAMES[function]
        if function not in self.helpers:
            self.helpers[function] = _helper_playbook(function, name)
        return name

    def build(self) -> Agent:
        return Agent(
            name=self.name,
            description=self.description,
            metadata=self.metadata,
            playbooks=(*self.main, *self.playbooks, *(self.helpers[key] for key in sorted(self.helpers))),
        )


def _helper_playbook(function: str, name: str) -> Playbook:
    """A Python playbook bound to a support helper, its header read from the helper's signature."""
    helper = langgraph_support.HELPERS[function]
    hints = typing.get_type_hints(helper)
    parameters = tuple(
        Parameter(
            name=parameter.name,
            type=pal_type(hints.get(parameter.name)),
            default=None if parameter.default is parameter.empty else literal(parameter.default),
        )
        for parameter in inspect.signature(helper).parameters.values()
    )
    returns = hints.get("return")
    return Playbook(
        name=name,
        kind=PlaybookKind.PYTHON,
        parameters=parameters,
        returns=pal_type(returns) or ("None" if returns is type(None) else "Any"),
        description=_first_paragraph(inspect.getdoc(helper) or ""),
        metadata=Metadata(python=f"{SUPPORT_MODULE}:{function}"),
    )


def _first_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n", 1)[0].split())


def safe_description(text: str) -> str:
    """Text that reads back as description: no header-like or fence lines, no trailing spaces."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    safe = [f" {line}" if _HEADER_LINE_RE.match(line) else line for line in lines]
    return "\n".join(safe).strip("\n")


def build_program(graph: Graph, findings: Findings) -> Program:
    """The PAL program of `graph`."""
    writer = _ProgramWriter(findings)
    return Program(agents=writer.write(graph))


class _ProgramWriter:
    __slots__ = ("agent_names", "agents", "findings", "llm_agents")

    def __init__(self, findings: Findings) -> None:
        self.findings = findings
        self.agent_names = Namer()
        self.agents: list[_AgentParts] = []
        self.llm_agents: dict[int, str] = {}

    def write(self, graph: Graph) -> tuple[Agent, ...]:
        top = _AgentParts(
            name=self.agent_names.take(camel_case(graph.name), "Graph"),
            description=_graph_description(graph),
            metadata=_graph_metadata(graph),
        )
        self.agents.append(top)
        if graph.agent is not None:
            self._agent_playbooks(graph.agent, top, public=False)
        entry = _GraphWriter(self, top, graph, prefix="", scope="").write(ENTRY_PLAYBOOK, top_level=True)
        top.main.insert(0, entry)
        return tuple(agent.build() for agent in self.agents)

    def llm_agent(self, agent: LlmAgent) -> str:
        """The name of the PAL agent for an LLM agent node, building it on first use."""
        known = self.llm_agents.get(id(agent))
        if known is not None:
            return known
        parts = _AgentParts(
            name=self.agent_names.take(camel_case(agent.name), "Agent"),
            description=_agent_description(agent),
            metadata=Metadata(extra={"langgraph": {"agent": agent.name, "factory": agent.factory.value}}),
        )
        self.llm_agents[id(agent)] = parts.name
        self.agents.append(parts)
        self._agent_playbooks(agent, parts, public=True)
        return parts.name

    def _agent_playbooks(self, agent: LlmAgent, parts: _AgentParts, *, public: bool) -> None:
        notes = [
            'The conversation is $state["messages"]; answer its last message, calling this agent\'s playbooks '
            "when they help.",
            'Return the state update {"messages": [<your reply>]}.',
        ]
        if agent.handoffs:
            notes.append(
                "To hand the conversation to another agent, call its TransferTo playbook and return the Command "
                "it returns."
            )
        parts.main.append(
            Playbook(
                name=AGENT_PLAYBOOK,
                parameters=(Parameter(name="state", type="dict"),),
                returns="dict",
                description=safe_description(agent.prompt or ""),
                metadata=Metadata(public=True if public else None, execution_mode="react"),
                notes=tuple(Note(id=f"N{index}", text=text) for index, text in enumerate(notes, start=1)),
            )
        )
        for tool in agent.tools:
            parts.playbooks.append(
                Playbook(
                    name=parts.namer.take(camel_case(tool.name), "Tool"),
                    kind=PlaybookKind.PYTHON,
                    parameters=tuple(Parameter(name=name, type=kind) for name, kind in tool.parameters),
                    returns=tool.callee.returns,
                    description=safe_description(tool.description),
                    metadata=Metadata(python=tool.callee.path),
                )
            )
        for handoff in agent.handoffs:
            steps = StepList()
            arguments = f"agent={literal(handoff.destination)}"
            if handoff.update:
                arguments += f", update={literal(handoff.update)}"
            steps.add("QUE", f"$command = {parts.helper('handoff')}({arguments})")
            steps.add("RET", "$command")
            parts.playbooks.append(
                Playbook(
                    name=parts.namer.take(camel_case(handoff.name), "Handoff"),
                    returns="Command",
                    description=safe_description(handoff.description)
                    or f"Hand the conversation to agent {handoff.destination!r}.",
                    steps=steps.build(),
                )
            )


def _graph_description(graph: Graph) -> str:
    where = f"`{graph.source}`" if graph.source else f"`{graph.name}`"
    if graph.agent is not None:
        return (
            f"{_agent_description(graph.agent)} Imported from {where}: {ENTRY_PLAYBOOK} runs the agent on an "
            "input state and returns the final state, as `graph.invoke` does."
        )
    return (
        f"LangGraph graph {where}, imported by `pal import langgraph`. {ENTRY_PLAYBOOK} runs it on an input "
        "state and returns the final state, as `graph.invoke` does: `$state` holds the graph state, each "
        "node is a playbook, and the steps follow the graph's edges one superstep at a time."
    )


def _graph_metadata(graph: Graph) -> Metadata:
    details: dict[str, Any] = {}
    if graph.source:
        details["graph"] = graph.source
    if graph.agent is not None:
        details["factory"] = graph.agent.factory.value
    return Metadata(extra={"langgraph": details}) if details else Metadata()


def _agent_description(agent: LlmAgent) -> str:
    return (
        f"LangGraph agent `{agent.name}` ({agent.factory.value.rpartition('.')[2]}), imported by "
        f"`pal import langgraph`: a model that answers the conversation, calling its tools until it is done. "
        f"{AGENT_PLAYBOOK} is the agent: it takes the graph state and returns the agent's update."
    )


# --- one graph: the entry playbook and the playbooks of its nodes ---------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _NodeCall:
    """How a step calls a node: the callee text and its input parameter (None: no update is assigned)."""

    callee: str
    parameter: str | None
    view: InputView | None = None
    after: Callable[[str], list[str]] | None = None


class _GraphWriter:
    __slots__ = ("agent", "calls", "flow", "graph", "prefix", "program", "routers", "scope", "steps")

    def __init__(
        self, program: _ProgramWriter, agent: _AgentParts, graph: Graph, *, prefix: str, scope: str
    ) -> None:
        self.program = program
        self.agent = agent
        self.graph = graph
        self.prefix = prefix
        self.scope = scope
        self.calls: dict[str, _NodeCall] = {}
        self.routers: dict[str, str] = {}
        self.steps = StepList()
        self.flow: Flow = build_flow(graph, scope, program.findings)

    def write(self, name: str, *, top_level: bool) -> Playbook:
        for node in self.graph.nodes.values():
            self.calls[node.name] = self._node_playbook(node)
        helper = self.agent.helper
        steps = self.steps
        steps.add("EXE", f"$schema:dict = {literal(_schema(self.graph))}")
        steps.add("QUE", f"$state:dict = {helper('start_graph')}(input=$input, schema=$schema)")
        blocks = {block.id: block for block in self.flow.blocks}
        order = self.flow.order
        self._exit(self.flow.start, next_block=order[0] if order else END_BLOCK)
        for index, block_id in enumerate(order):
            steps.label(block_id)
            self._block(blocks[block_id])
            following = order[index + 1] if index + 1 < len(order) else END_BLOCK
            self._exit(blocks[block_id].exit, next_block=following)
        steps.label(_END_LABEL)
        steps.add("QUE", f"$output:dict = {helper('finish_graph')}(state=$state, schema=$schema)")
        steps.add("RET", "$output")
        where = "the graph" if top_level else f"subgraph `{self.graph.name}`"
        description = (
            f"Runs {where} on `$input` and returns its final state, as `graph.invoke` does."
            if top_level
            else f"Runs {where} on `$input` (the parent's state) and returns its output as the node's update."
        )
        return Playbook(
            name=name,
            parameters=(Parameter(name="input", type="dict"),),
            returns="dict",
            description=description,
            triggers=(Trigger(id="T1", code="BGN", text="At the beginning"),) if top_level else (),
            steps=steps.build(),
        )

    # --- node playbooks --------------------------------------------------------------------------

    def _node_playbook(self, node: Node) -> _NodeCall:
        base = f"{self.prefix}{camel_case(node.name)}"
        if node.kind is NodeKind.FUNCTION and node.callee is not None:
            parameter = node.callee.parameters[0] if node.callee.parameters else "state"
            name = self.agent.namer.take(base, "Node")
            what = f"Node `{node.name}` of the graph"
            doc = f"{what}. {node.callee.description}".strip() if node.callee.description else f"{what}."
            if node.asks_human:
                self.agent.playbooks.append(self._asking_playbook(name, node, doc))
                return _NodeCall(callee=name, parameter="state", view=node.view)
            input_type = node.view.model.rpartition(":")[2] if node.view and node.view.model else "dict"
            self.agent.playbooks.append(
                Playbook(
                    name=name,
                    kind=PlaybookKind.PYTHON,
                    parameters=(Parameter(name=parameter, type=input_type),),
                    returns=_returns_text(node.callee.returns),
                    description=safe_description(doc),
                    metadata=Metadata(python=node.callee.path),
                )
            )
            return _NodeCall(callee=name, parameter=parameter, view=node.view)
        if node.kind is NodeKind.SUBGRAPH and node.subgraph is not None:
            name = self.agent.namer.take(f"{base}Graph" if not base.endswith("Graph") else base, "Node")
            nested = _GraphWriter(
                self.program, self.agent, node.subgraph, prefix=base, scope=f"{self.scope}{node.name}/"
            )
            self.agent.playbooks.append(nested.write(name, top_level=False))
            return _NodeCall(callee=name, parameter="input")
        if node.kind is NodeKind.AGENT and node.agent is not None:
            if self.graph.agent is node.agent:
                return _NodeCall(callee=AGENT_PLAYBOOK, parameter="state")
            agent_name = self.program.llm_agent(node.agent)
            return _NodeCall(
                callee=f"{agent_name}.{AGENT_PLAYBOOK}", parameter="state", after=self._reply(node)
            )
        reason = node.unsupported_reason or "the importer cannot call this node"
        arguments = f"node={literal(node.name)}, reason={literal(reason)}"
        return _NodeCall(callee=f"{self.agent.helper('unsupported')}({arguments})", parameter=None)

    def _reply(self, node: Node) -> Callable[[str], list[str]] | None:
        agent = node.agent
        if agent is None or agent.reply_mode is None:
            return None
        arguments = f"mode={literal(agent.reply_mode)}, agent={literal(node.name)}"
        if agent.supervisor is not None:
            arguments += f", supervisor={literal(agent.supervisor)}"
        helper = self.agent.helper("agent_reply")
        return lambda variable: [f"{variable} = {helper}(output={variable}, {arguments})"]

    def _asking_playbook(self, name: str, node: Node, doc: str) -> Playbook:
        helper = self.agent.helper
        path = node.callee.path if node.callee is not None else ""
        steps = StepList()
        steps.add("EXE", "$answers:list = []")
        steps.label("resume")
        steps.add(
            "QUE", f"$update = {helper('resume_node')}(node={literal(path)}, state=$state, answers=$answers)"
        )
        steps.add("QUE", f"$asked:bool = {helper('is_interrupted')}(update=$update)")
        body = StepList()
        body.add("QUE", f"$question = {helper('interrupt_question')}(update=$update)")
        body.add("QUE", "Say(user, $question)")
        body.add("YLD", "user")
        body.add("QUE", '$answer = WaitForMessage("human")')
        body.add("QUE", f"$answers:list = {helper('add_answer')}(answers=$answers, answer=$answer)")
        body.jump("resume")
        steps.branch("If $asked == True", body)
        steps.add("RET", "$update")
        description = (
            f"{doc} It asks the human with `interrupt()`: the node function runs with the answers given so "
            "far, and at each unanswered question the user is asked and it runs again, as LangGraph does "
            "when a run resumes."
        )
        return Playbook(
            name=name,
            parameters=(Parameter(name="state", type="dict"),),
            returns="dict",
            description=safe_description(description),
            steps=steps.build(),
        )

    def _router_playbook(self, router: Router) -> str:
        callee = router.callee
        if callee is None or callee.path is None:
            raise ValueError("a router without an import path has no playbook")
        known = self.routers.get(callee.path)
        if known is not None:
            return known
        name = self.agent.namer.take(f"{self.prefix}{camel_case(callee.name)}", "Router")
        parameter = callee.parameters[0] if callee.parameters else "state"
        where = "START" if router.source == START else f"node `{router.source}`"
        doc = f"Router of the conditional edge after {where}."
        if callee.description:
            doc = f"{doc} {callee.description}"
        input_type = router.view.model.rpartition(":")[2] if router.view and router.view.model else "dict"
        self.agent.playbooks.append(
            Playbook(
                name=name,
                kind=PlaybookKind.PYTHON,
                parameters=(Parameter(name=parameter, type=input_type),),
                returns=_returns_text(callee.returns) if callee.returns else "str",
                description=safe_description(doc),
                metadata=Metadata(python=callee.path),
            )
        )
        self.routers[callee.path] = name
        return name

    # --- blocks ----------------------------------------------------------------------------------

    def _block(self, block: Block) -> None:
        steps = self.steps
        helper = self.agent.helper
        if any(task.node in self.graph.interrupt_before for task in block.tasks):
            steps.add("YLD", "user")
        if len(block.tasks) == 1 and not block.tasks[0].pushed:
            node = block.tasks[0].node
            if self.calls[node].parameter is None:
                self.steps.add("QUE", self.calls[node].callee)  # Unsupported: fails here with the reason
                return
            self._call(node, "$state")
            routes = ""
            if self.graph.nodes[node].command_ends:
                routes = f", routes={literal(list(self.graph.nodes[node].command_ends))}"
            steps.add(
                "QUE",
                f"$state:dict = {helper('apply_update')}(state=$state, update=$update, node={literal(node)}, "
                f"schema=$schema{routes})",
            )
        else:
            steps.add("EXE", "$writes:list = []")
            for task in block.tasks:
                if task.pushed:
                    self._send_loop(task)
                else:
                    self._call(task.node, "$state")
                    self._stage(task)
            steps.add(
                "QUE", f"$state:dict = {helper('apply_writes')}(state=$state, writes=$writes, schema=$schema)"
            )
        if any(task.node in self.graph.interrupt_after for task in block.tasks):
            steps.add("YLD", "user")

    def _call(self, node: str, source: str) -> None:
        call = self.calls[node]
        if call.parameter is None:
            self.steps.add("QUE", call.callee)
            return
        variable = source
        if call.view is not None and source == "$state":
            self.steps.add("QUE", f"$node_input = {self._view_call(call.view)}")
            variable = "$node_input"
        self.steps.add("QUE", f"$update = {call.callee}({call.parameter}={variable})")
        if call.after is not None:
            for text in call.after("$update"):
                self.steps.add("QUE", text)

    def _view_call(self, view: InputView) -> str:
        arguments = ["state=$state"]
        if view.keys is not None:
            arguments.append(f"keys={literal(list(view.keys))}")
        if view.model is not None:
            arguments.append(f"model={literal(view.model)}")
        return f"{self.agent.helper('state_view')}({', '.join(arguments)})"

    def _stage(self, task: Task) -> None:
        self.steps.add(
            "QUE",
            f"$writes:list = {self.agent.helper('stage_update')}(writes=$writes, node={literal(task.node)}, "
            "update=$update)",
        )

    def _send_loop(self, task: Task) -> None:
        helper = self.agent.helper
        loop = ("send", task.node, id(task))
        body = StepList()
        body.add("QUE", f"$packet = {helper('next_send')}(sends=$sends)")
        body.add("QUE", f"$sends:list = {helper('other_sends')}(sends=$sends)")
        call = self.calls[task.node]
        if call.parameter is None:
            body.add("QUE", call.callee)
        else:
            body.add("QUE", f"$update = {call.callee}({call.parameter}=$packet)")
        body.add(
            "QUE",
            f"$writes:list = {helper('stage_update')}(writes=$writes, node={literal(task.node)}, update=$update)",
        )
        body.jump(loop)
        self.steps.label(loop)
        self.steps.branch("While $sends != []", body)

    # --- ways out --------------------------------------------------------------------------------

    def _target(self, block: int) -> object:
        return _END_LABEL if block == END_BLOCK else block

    def _exit(self, exit_: Exit, *, next_block: int) -> None:
        steps = self.steps
        if exit_.kind is ExitKind.STATIC:
            if exit_.following != next_block:
                steps.jump(self._target(exit_.following))
            return
        if exit_.kind is ExitKind.UNSUPPORTED:
            arguments = f"node={literal(exit_.node)}, reason={literal(exit_.reason)}"
            steps.add("QUE", f"{self.agent.helper('unsupported')}({arguments})")
            if next_block != END_BLOCK:
                steps.jump(_END_LABEL)
            return
        if exit_.kind is ExitKind.COMMAND:
            steps.add(
                "QUE",
                f"$route:str = {self.agent.helper('command_goto')}(update=$update, node={literal(exit_.node)})",
            )
            self._branches(exit_.choices, router=None)
            body = StepList()
            body.jump(self._target(exit_.following))
            steps.branch("Otherwise", body)
            return
        router = exit_.router
        if router is None:
            raise ValueError("a router exit without its router")
        self._route(router)
        self._branches(exit_.choices, router=router)

    def _route(self, router: Router) -> None:
        helper = self.agent.helper
        steps = self.steps
        node = router.source
        if router.state_key is not None:
            key, default = router.state_key
            steps.add(
                "QUE",
                f"$result = {helper('state_value')}(state=$state, key={literal(key)}, default={literal(default)})",
            )
        elif router.callee is None or router.callee.path is None:
            raise ValueError("a router without an import path has no route step")
        else:
            variable = "$state"
            if router.view is not None:
                steps.add("QUE", f"$router_input = {self._view_call(router.view)}")
                variable = "$router_input"
            parameter = router.callee.parameters[0] if router.callee.parameters else "state"
            steps.add("QUE", f"$result = {self._router_playbook(router)}({parameter}={variable})")
        arguments = (
            f"result=$result, node={literal(node)}, ends={_ends_literal(router, tuple(self.graph.nodes))}"
        )
        if router.may_send:
            arguments += ", sends=True"
        steps.add("QUE", f"$route:str = {helper('destination')}({arguments})")

    def _branches(self, choices: tuple[tuple[str, int], ...], *, router: Router | None) -> None:
        for index, (target, block) in enumerate(choices):
            body = StepList()
            if router is not None and router.may_send and target != END:
                body.add(
                    "QUE",
                    f"$sends:list = {self.agent.helper('send_args')}(result=$result, node={literal(target)}, "
                    "state=$state)",
                )
            body.jump(self._target(block))
            keyword = "If" if index == 0 else "Else if"
            self.steps.branch(f"{keyword} $route == {literal(target)}", body)


def _returns_text(annotation: str | None) -> str:
    if not annotation:
        return "dict"
    head = re.match(r"[A-Za-z_][A-Za-z0-9_]*", annotation)
    if head is None:
        return "dict"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\[\]]*\])?", annotation):
        return annotation
    return head.group(0)


def _ends_literal(router: Router, nodes: tuple[str, ...]) -> str:
    if router.ends is None:
        return literal([*nodes, END])
    if all(isinstance(key, str) and key == target for key, target in router.ends):
        return literal([target for _, target in router.ends])
    if all(isinstance(key, str) for key, _ in router.ends):
        return literal(dict(router.ends))
    return literal([[key, target] for key, target in router.ends])


def _schema(graph: Graph) -> dict[str, Any]:
    channels: dict[str, Any] = {}
    for channel in graph.channels:
        spec: dict[str, Any] = {"type": channel.type}
        if channel.reducer is not None:
            spec["reducer"] = channel.reducer
        if channel.has_initial:
            if channel.factory is not None:
                spec["factory"] = channel.factory
            else:
                spec["initial"] = channel.initial
        channels[channel.key] = spec
    schema: dict[str, Any] = {"channels": channels}
    every = tuple(channels)
    if graph.input_keys != every:
        schema["input"] = list(graph.input_keys)
    if graph.output_keys != every:
        schema["output"] = list(graph.output_keys)
    return schema
