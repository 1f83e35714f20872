"""The steps of a graph's `Invoke` playbook, and the playbooks of its nodes and routers.

    01:EXE $schema:dict = {...}                       the state schema: types, reducers
    02:EXE $state:dict = StartGraph(input=$input, schema=$schema)
    03:QUE $update = First(state=$state)              one superstep: the node calls, queued ...
    04:YLD call                                       ... and run
    05:EXE $state:dict = ApplyUpdate(state=$state, update=$update, node="first", schema=$schema)
    06:EXE $result = Route(state=$state)              a conditional edge: the router ...
    07:EXE $route:str = Destination(result=$result, node="first", ends=[...])
    08:CND If $route == "second"                      ... and a branch per destination
      08.01:JMP 10
    ...
    NN:EXE $output:dict = FinishGraph(state=$state, schema=$schema)
    NN+1:RET $output

Node calls are QUE steps flushed by `YLD call`: the calls of a superstep are queued together, all on
the state before the superstep, and their writes applied together. Bookkeeping (the helpers of
`pal.langgraph` and routers) runs at once as EXE steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from importers.common.emit import AgentParts, python_playbook
from importers.common.naming import camel_case, safe_description
from importers.common.steps import StepList, literal
from importers.langgraph._emit import AGENT_PLAYBOOK, ENTRY_PLAYBOOK
from importers.langgraph._flow import END_BLOCK, Block, Exit, ExitKind, Flow, Task, build_flow
from importers.langgraph._model import END, START, Graph, InputView, Node, NodeKind, Router
from pal_core.ir import Metadata, Parameter, Playbook, Trigger
from runtime.schema import json_schema_for_type

if TYPE_CHECKING:
    from importers.langgraph._emit import ProgramWriter

_END_LABEL = "end"
_SLUG_RE = re.compile(r"[^A-Za-z0-9_]+")
_TOOL_NAME_RE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class _NodeCall:
    """How steps call one node."""

    callee: str
    """The playbook to call (`Name`, `Agent.Run`); for an unsupported node, the whole failing call."""
    parameter: str | None
    """The parameter that takes the node's input; None for an unsupported node (nothing to assign)."""
    view: InputView | None = None
    """The node's view of the state, when not the whole dict."""
    reply: str | None = None
    """For a langgraph-supervisor worker: the AgentReply arguments after `output=`."""


class GraphSteps:
    """Writes one graph's `Invoke` playbook into its agent, with the playbooks of its nodes."""

    __slots__ = ("agent", "calls", "flow", "graph", "program", "routers", "scope", "steps")

    def __init__(self, program: ProgramWriter, agent: AgentParts, graph: Graph, *, scope: str) -> None:
        self.program = program
        self.agent = agent
        self.graph = graph
        self.scope = scope
        self.calls: dict[str, _NodeCall] = {}
        self.routers: dict[str, str] = {}
        self.steps = StepList()
        self.flow: Flow = build_flow(graph, scope, program.findings)

    def write(self, name: str, *, top_level: bool) -> Playbook:
        for node in self.graph.nodes.values():
            self.calls[node.name] = self._node(node)
        helper = self.agent.helper
        steps = self.steps
        steps.add("EXE", f"$schema:dict = {literal(_schema(self.graph))}")
        steps.add("EXE", f"$state:dict = {helper('start_graph')}(input=$input, schema=$schema)")
        blocks = {block.id: block for block in self.flow.blocks}
        order = self.flow.order
        self._exit(self.flow.start, next_block=order[0] if order else END_BLOCK)
        for index, block_id in enumerate(order):
            steps.label(block_id)
            self._block(blocks[block_id])
            following = order[index + 1] if index + 1 < len(order) else END_BLOCK
            self._exit(blocks[block_id].exit, next_block=following)
        steps.label(_END_LABEL)
        steps.add("EXE", f"$output:dict = {helper('finish_graph')}(state=$state, schema=$schema)")
        steps.add("RET", "$output")
        if top_level:
            description = "Runs the graph on `$input` and returns its final state, as `graph.invoke` does."
        else:
            description = (
                "Runs the subgraph on `$input` (its parent's state) and returns the subgraph's output."
            )
        return Playbook(
            name=name,
            parameters=(Parameter(name="input", type="dict"),),
            returns="dict",
            description=description,
            metadata=_entry_metadata(self.graph, top_level=top_level),
            triggers=(Trigger(id="T1", code="BGN", text="At the beginning"),) if top_level else (),
            steps=steps.build(),
        )

    # --- node and router playbooks ---------------------------------------------------------------

    def _node(self, node: Node) -> _NodeCall:
        base = camel_case(node.name)
        if node.kind is NodeKind.FUNCTION and node.callee is not None:
            name = self.agent.namer.take(base, "Node")
            what = f"Node `{node.name}` of the graph."
            doc = f"{what} {node.callee.description}" if node.callee.description else what
            if node.asks_human:
                self.agent.playbooks.append(self._asking_playbook(name, node, doc))
                return _NodeCall(callee=name, parameter="node_state", view=node.view)
            parameter = node.callee.parameters[0] if node.callee.parameters else "state"
            input_type = node.view.model.rpartition(":")[2] if node.view and node.view.model else "dict"
            self.agent.playbooks.append(
                python_playbook(
                    name=name,
                    path=node.callee.path,
                    parameters=(Parameter(name=parameter, type=input_type),),
                    returns=_returns_text(node.callee.returns),
                    description=safe_description(doc),
                )
            )
            return _NodeCall(callee=name, parameter=parameter, view=node.view)
        if node.kind is NodeKind.SUBGRAPH and node.subgraph is not None:
            agent = self.program.graph_agent(
                node.subgraph, scope=f"{self.scope}{node.name}/", top_level=False
            )
            return _NodeCall(callee=f"{agent}.{ENTRY_PLAYBOOK}", parameter="input")
        if node.kind is NodeKind.AGENT and node.agent is not None:
            if self.graph.agent is node.agent:
                return _NodeCall(callee=AGENT_PLAYBOOK, parameter="state")
            agent = self.program.llm_agent(node.agent)
            reply = None
            if node.agent.reply_mode is not None:
                reply = f"mode={literal(node.agent.reply_mode)}, agent={literal(node.name)}"
                if node.agent.supervisor is not None:
                    reply += f", supervisor={literal(node.agent.supervisor)}"
            return _NodeCall(callee=f"{agent}.{AGENT_PLAYBOOK}", parameter="state", reply=reply)
        reason = node.unsupported_reason or "the importer cannot call this node"
        arguments = f"node={literal(node.name)}, reason={literal(reason)}"
        return _NodeCall(callee=f"{self.agent.helper('unsupported')}({arguments})", parameter=None)

    def _asking_playbook(self, name: str, node: Node, doc: str) -> Playbook:
        """A node that calls `interrupt()`: run it with the answers so far until it finishes.

        Its variables have names of their own: PAL variables belong to the agent, so they must not
        overwrite the `$state` and `$update` of the Invoke playbook that called it.
        """
        helper = self.agent.helper
        path = node.callee.path if node.callee is not None else ""
        steps = StepList()
        steps.add("EXE", "$answers:list = []")
        steps.label("resume")
        steps.add(
            "EXE",
            f"$node_update = {helper('resume_node')}(node={literal(path)}, state=$node_state, answers=$answers)",
        )
        steps.add("EXE", f"$asked:bool = {helper('is_interrupted')}(update=$node_update)")
        body = StepList()
        body.add("EXE", f"$question = {helper('interrupt_question')}(update=$node_update)")
        body.add("QUE", 'Say("human", $question)')
        body.add("EXE", '$reply = WaitForMessage("human")')
        body.add("EXE", f"$answers:list = {helper('add_answer')}(answers=$answers, answer=$reply)")
        body.jump("resume")
        steps.branch("If $asked == True", body)
        steps.add("RET", "$node_update")
        description = (
            f"{doc} It asks the human with `interrupt()`: the node function runs with the answers given so "
            "far; at a question without an answer, the question is said to the user, the reply is added to "
            "the answers and the function runs again, as LangGraph does when a run resumes."
        )
        return Playbook(
            name=name,
            parameters=(Parameter(name="node_state", type="dict"),),
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
        name = self.agent.namer.take(camel_case(callee.name), "Router")
        parameter = callee.parameters[0] if callee.parameters else "state"
        where = "START" if router.source == START else f"node `{router.source}`"
        doc = f"Router of the conditional edge after {where}."
        if callee.description:
            doc = f"{doc} {callee.description}"
        input_type = router.view.model.rpartition(":")[2] if router.view and router.view.model else "dict"
        self.agent.playbooks.append(
            python_playbook(
                name=name,
                path=callee.path,
                parameters=(Parameter(name=parameter, type=input_type),),
                returns=_returns_text(callee.returns) if callee.returns else "str",
                description=safe_description(doc),
            )
        )
        self.routers[callee.path] = name
        return name

    # --- blocks: one superstep each --------------------------------------------------------------

    def _block(self, block: Block) -> None:
        steps = self.steps
        helper = self.agent.helper
        if any(task.node in self.graph.interrupt_before for task in block.tasks):
            steps.add("YLD", "user")
        if len(block.tasks) == 1 and not block.tasks[0].pushed:
            node = block.tasks[0].node
            if self._queue(node, "$state", "$update"):
                steps.add("YLD", "call")
                self._reply(node, "$update")
                routes = self.graph.nodes[node].command_ends
                extra = f", routes={literal(list(routes))}" if routes else ""
                steps.add(
                    "EXE",
                    f"$state:dict = {helper('apply_update')}(state=$state, update=$update, node={literal(node)}, "
                    f"schema=$schema{extra})",
                )
        else:
            pulled = [task.node for task in block.tasks if not task.pushed]
            queued = [node for node in pulled if self._queue(node, "$state", _update_variable(node))]
            if queued:
                steps.add("YLD", "call")
            for node in queued:
                self._reply(node, _update_variable(node))
            writes = ", ".join(f"[{literal(node)}, {_update_variable(node)}]" for node in queued)
            steps.add("EXE", f"$writes:list = [{writes}]")
            pushed = [task for task in block.tasks if task.pushed]
            if len(pushed) == 1:
                self._send_loop(pushed[0])
            elif pushed:
                self._packet_loop(pushed)
            steps.add(
                "EXE", f"$state:dict = {helper('apply_writes')}(state=$state, writes=$writes, schema=$schema)"
            )
        if any(task.node in self.graph.interrupt_after for task in block.tasks):
            steps.add("YLD", "user")

    def _queue(self, node: str, source: str, result: str, steps: StepList | None = None) -> bool:
        """Queue the call of `node` on `source` into `result`; False for an unsupported node, whose
        failing call is written instead."""
        steps = steps if steps is not None else self.steps
        call = self.calls[node]
        if call.parameter is None:
            steps.add("EXE", call.callee)
            return False
        argument = source
        if call.view is not None and source == "$state":
            argument = "$node_input" if result == "$update" else f"$input_{_slug(node)}"
            steps.add("EXE", f"{argument} = {self._view_call(call.view)}")
        steps.add("QUE", f"{result} = {call.callee}({call.parameter}={argument})")
        return True

    def _reply(self, node: str, variable: str, steps: StepList | None = None) -> None:
        reply = self.calls[node].reply
        if reply is not None:
            steps = steps if steps is not None else self.steps
            steps.add("EXE", f"{variable} = {self.agent.helper('agent_reply')}(output={variable}, {reply})")

    def _view_call(self, view: InputView) -> str:
        arguments = ["state=$state"]
        if view.keys is not None:
            arguments.append(f"keys={literal(list(view.keys))}")
        if view.model is not None:
            arguments.append(f"model={literal(view.model)}")
        return f"{self.agent.helper('state_view')}({', '.join(arguments)})"

    def _send_loop(self, task: Task) -> None:
        """One task per Send packet in `$sends`, each writing after the others of the superstep."""
        body = StepList()
        body.add("EXE", "$packet = $sends[0]")
        body.add("EXE", "$sends:list = $sends[1:]")
        if self._queue(task.node, "$packet", "$update", body):
            body.add("YLD", "call")
            self._reply(task.node, "$update", body)
            body.add("EXE", f"$writes:list = $writes + [[{literal(task.node)}, $update]]")
        loop = ("send", task.node)
        body.jump(loop)
        self.steps.label(loop)
        self.steps.branch("While $sends != []", body)

    def _packet_loop(self, tasks: list[Task]) -> None:
        """Send tasks to several nodes: `$sends` holds [node, input] pairs in LangGraph's order, and each
        runs its node, writing after the others of the superstep."""
        body = StepList()
        body.add("EXE", "$packet_node:str = $sends[0][0]")
        body.add("EXE", "$packet = $sends[0][1]")
        body.add("EXE", "$sends:list = $sends[1:]")
        for index, task in enumerate(tasks):
            branch = StepList()
            if self._queue(task.node, "$packet", "$update", branch):
                branch.add("YLD", "call")
                self._reply(task.node, "$update", branch)
                branch.add("EXE", f"$writes:list = $writes + [[{literal(task.node)}, $update]]")
            keyword = "If" if index == 0 else "Else if"
            body.branch(f"{keyword} $packet_node == {literal(task.node)}", branch)
        loop = ("send", "+".join(task.node for task in tasks))
        body.jump(loop)
        self.steps.label(loop)
        self.steps.branch("While $sends != []", body)

    # --- ways out of a block ---------------------------------------------------------------------

    def _exit(self, exit_: Exit, *, next_block: int) -> None:
        steps = self.steps
        if exit_.kind is ExitKind.STATIC:
            if exit_.following != next_block:
                steps.jump(_label(exit_.following))
            return
        if exit_.kind is ExitKind.UNSUPPORTED:
            arguments = f"node={literal(exit_.node)}, reason={literal(exit_.reason)}"
            steps.add("EXE", f"{self.agent.helper('unsupported')}({arguments})")
            if next_block != END_BLOCK:
                steps.jump(_END_LABEL)
            return
        if exit_.kind is ExitKind.COMMAND:
            if exit_.several:
                order = literal([node for node in self.graph.nodes[exit_.node].command_ends if node != END])
                helper = self.agent.helper("command_gotos")
                steps.add(
                    "EXE",
                    f"$route:list = {helper}(update=$update, node={literal(exit_.node)}, order={order})",
                )
            else:
                helper = self.agent.helper("command_goto")
                steps.add("EXE", f"$route:str = {helper}(update=$update, node={literal(exit_.node)})")
            self._branches(exit_.choices, router=None)
            body = StepList()
            body.jump(_label(exit_.following))
            steps.branch("Otherwise", body)
            return
        if exit_.router is None:
            raise ValueError("a router exit without its router")
        self._route(exit_.router, several=exit_.several)
        self._branches(exit_.choices, router=exit_.router)

    def _route(self, router: Router, *, several: bool = False) -> None:
        helper = self.agent.helper
        steps = self.steps
        if router.state_key is not None:
            key, default = router.state_key
            steps.add(
                "EXE",
                f"$result = {helper('state_value')}(state=$state, key={literal(key)}, default={literal(default)})",
            )
        elif router.callee is not None and router.callee.path is not None:
            argument = "$state"
            if router.view is not None:
                argument = "$router_input"
                steps.add("EXE", f"$router_input = {self._view_call(router.view)}")
            parameter = router.callee.parameters[0] if router.callee.parameters else "state"
            steps.add("EXE", f"$result = {self._router_playbook(router)}({parameter}={argument})")
        else:
            raise ValueError("a router without an import path has no route step")
        nodes = tuple(self.graph.nodes)
        arguments = f"result=$result, node={literal(router.source)}, ends={_ends_literal(router, nodes)}"
        if router.may_send:
            arguments += ", sends=True"
        if several:
            order = [target for target in router.targets(nodes) if target != END]
            steps.add("EXE", f"$route:list = {helper('destinations')}({arguments}, order={literal(order)})")
        else:
            steps.add("EXE", f"$route:str = {helper('destination')}({arguments})")

    def _branches(
        self, choices: tuple[tuple[str | tuple[str, ...], int], ...], *, router: Router | None
    ) -> None:
        for index, (target, block) in enumerate(choices):
            body = StepList()
            if router is not None and router.may_send and target not in (END, ()):
                body.add("EXE", f"$sends:list = {self._sends(target)}")
            body.jump(_label(block))
            keyword = "If" if index == 0 else "Else if"
            shown = literal(list(target)) if isinstance(target, tuple) else literal(target)
            self.steps.branch(f"{keyword} $route == {shown}", body)

    def _sends(self, target: str | tuple[str, ...]) -> str:
        """The call that gives the inputs of the Send tasks of a route: one node's, or several nodes'."""
        if isinstance(target, str) or len(target) == 1:
            node = target if isinstance(target, str) else target[0]
            return f"{self.agent.helper('send_args')}(result=$result, node={literal(node)}, state=$state)"
        nodes = literal(list(target))
        return f"{self.agent.helper('send_packets')}(result=$result, nodes={nodes}, state=$state)"


def _entry_metadata(graph: Graph, *, top_level: bool) -> Metadata:
    """The imported graph's `Invoke` is public and served over MCP as one tool named after the graph,
    whose arguments are the input state (`pal mcp serve`); a subgraph's `Invoke` is public so its parent
    can call it, and kept out of the tool list."""
    if not top_level:
        return Metadata(public=True, extra={"mcp": {"tool": False}})
    properties = {
        channel.key: json_schema_for_type(channel.type)
        for channel in graph.channels
        if channel.key in graph.input_keys
    }
    schema = {"type": "object", "properties": properties}
    tool = _TOOL_NAME_RE.sub("_", graph.name).strip("_")[:64] or "graph"
    return Metadata(public=True, extra={"mcp": {"tool": tool, "arguments": "input", "input_schema": schema}})


def _label(block: int) -> object:
    return _END_LABEL if block == END_BLOCK else block


def _slug(node: str) -> str:
    return _SLUG_RE.sub("_", node).strip("_").lower() or "node"


def _update_variable(node: str) -> str:
    return f"$update_{_slug(node)}"


def _returns_text(annotation: str | None) -> str:
    if not annotation:
        return "dict"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\[\]]*\])?", annotation):
        return annotation
    head = re.match(r"[A-Za-z_][A-Za-z0-9_]*", annotation)
    return head.group(0) if head else "dict"


def _ends_literal(router: Router, nodes: tuple[str, ...]) -> str:
    if router.ends is None:
        return literal([*nodes, END])
    if all(isinstance(key, str) and key == target for key, target in router.ends):
        return literal([target for _, target in router.ends])
    if all(isinstance(key, str) for key, _ in router.ends):
        return literal(dict(router.ends))
    return literal([[key, target] for key, target in router.ends])


def _schema(graph: Graph) -> dict[str, object]:
    channels: dict[str, object] = {}
    for channel in graph.channels:
        spec: dict[str, object] = {"type": channel.type}
        if channel.reducer is not None:
            spec["reducer"] = channel.reducer
        if channel.has_initial:
            if channel.factory is not None:
                spec["factory"] = channel.factory
            else:
                spec["initial"] = channel.initial
        channels[channel.key] = spec
    schema: dict[str, object] = {"channels": channels}
    every = tuple(channels)
    if graph.input_keys != every:
        schema["input"] = list(graph.input_keys)
    if graph.output_keys != every:
        schema["output"] = list(graph.output_keys)
    return schema
