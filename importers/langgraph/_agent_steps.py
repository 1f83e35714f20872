"""The playbooks of an imported LLM agent and of a ToolNode: a PAL react playbook and tool playbooks.

    ## Run($state:dict, $graph_run=None) -> dict          the agent's turn on the graph state
    01:EXE $tool_node:dict = {"graph": "app:graph", "nodes": ["agent", "tools"]}
    02:EXE $tool_state:dict = $state
    03:EXE $tool_results:list = []
    04:EXE $conversation:list = AgentConversation(state=$state, messages_key="messages")
    05:EXE $reply = Respond(conversation=$conversation)      the model's loop: a react playbook
    06:EXE $update = AgentUpdate(state=$state, results=$tool_results, reply=$reply, agent="weather")
    07:RET $update

    ## Respond($conversation:list) -> str                    execution_mode: react; the system prompt
    ## GetWeather($city:str) -> str                          a tool: LangGraph's ToolNode runs the call
    01:EXE $tool_arguments:dict = {"city": $city}
    02:EXE $tool_result:dict = CallTool(tools=$tool_node, name="get_weather", arguments=$tool_arguments, ...)
    03:EXE $tool_results:list = $tool_results + [$tool_result]
    04:RET $tool_result["content"]

The prompt is PAL text (Respond's description); each tool is a playbook of the agent, which its model calls
in react rounds under the verifier; LangGraph's own ToolNode runs each call, so what a tool gets injected,
how its errors read and what it returns (a hand-off's `Command`) are LangGraph's. PAL variables belong to
the agent: the tool playbooks read `$tool_node`, `$tool_state` and `$graph_run` and add to `$tool_results`,
which Run set up (the ADK importer's `$session` works the same way).
"""

from __future__ import annotations

from importers.common.diagnostics import Findings
from importers.common.emit import AgentParts, numbered_notes
from importers.common.naming import camel_case, safe_description
from importers.common.steps import StepList, literal
from importers.langgraph._diagnostics import TOOL_WITHOUT_IMPORT_PATH
from importers.langgraph._model import AgentTool, LlmAgent
from pal_core.ir import Metadata, Parameter, Playbook

TURN_PLAYBOOK = "Run"
"""An LLM agent's turn on the graph state."""
MODEL_PLAYBOOK = "Respond"
"""An LLM agent's model: the react playbook holding its prompt."""
KEPT_VARIABLES = frozenset(
    {
        "state",
        "graph_run",
        "tool_node",
        "tool_state",
        "tool_results",
        "tool_result",
        "conversation",
        "reply",
        "update",
    }
)
"""Variables an agent's playbooks keep; a tool argument may not take one of these names."""


def write_agent_turn(
    parts: AgentParts, agent: LlmAgent, *, public: bool, findings: Findings, subject: str
) -> None:
    """Run, Respond and the tool playbooks of `agent`, into `parts`."""
    helper = parts.helper
    steps = StepList()
    if agent.tool_node is not None:
        steps.add("EXE", f"$tool_node:dict = {literal(agent.tool_node)}")
    steps.add("EXE", "$tool_state:dict = $state")
    steps.add("EXE", "$tool_results:list = []")
    key = literal(agent.messages_key)
    steps.add("EXE", f"$conversation:list = {helper('agent_conversation')}(state=$state, messages_key={key})")
    steps.add("EXE", f"$reply = {MODEL_PLAYBOOK}(conversation=$conversation)")
    arguments = "state=$state, results=$tool_results, reply=$reply"
    if agent.message_name is not None:
        arguments += f", agent={literal(agent.message_name)}"
    typed = agent.response_format
    if typed is not None:
        shown = {key: typed[key] for key in ("schema", "name", "tool_message") if typed.get(key) is not None}
        arguments += f", response_format={literal(shown)}"
    if agent.messages_key != "messages":
        arguments += f", messages_key={key}"
    steps.add("EXE", f"$update = {helper('agent_update')}({arguments})")
    steps.add("RET", "$update")
    extra = {"mcp": {"tool": False}} if public else {}
    parts.main.append(
        Playbook(
            name=TURN_PLAYBOOK,
            parameters=(
                Parameter(name="state", type="dict"),
                Parameter(name="graph_run", type="GraphRun", default="None"),
            ),
            returns="dict",
            description=(
                f"The agent's turn on the graph state: its model ({MODEL_PLAYBOOK}) answers the conversation, "
                "calling its tools, and the turn's messages are returned as LangGraph's agent returns them."
            ),
            metadata=Metadata(public=True if public else None, model_callable=False, extra=extra),
            steps=steps.build(),
        )
    )
    notes = [
        "$conversation is the conversation so far, each message with its role and content; answer its last "
        "message.",
        "Call your tools when they help; each call returns the tool's result. When you have the answer, "
        'return your reply as text: Return["..."].',
    ]
    if typed is not None:
        notes[1] = (
            "Call your tools when they help; each call returns the tool's result. When you have the answer, "
            f"return it as a JSON object with the fields of {typed['name']}: Return[{{...}}] (its schema is "
            "the playbook's returns_schema)."
        )
    if any(tool.name.startswith("transfer_") for tool in agent.tools):
        notes.append(
            "To hand the conversation to another agent, call its transfer tool, then return an empty reply: "
            'Return[""].'
        )
    parts.main.append(
        Playbook(
            name=MODEL_PLAYBOOK,
            parameters=(Parameter(name="conversation", type="list"),),
            returns="dict" if typed is not None else "str",
            description=safe_description(agent.prompt or "You are a helpful assistant."),
            metadata=Metadata(
                execution_mode="react",
                model_callable=False,
                returns_schema=typed["json_schema"] if typed is not None else None,
            ),
            notes=numbered_notes(notes),
        )
    )
    for tool in agent.tools:
        write_tool_playbook(parts, tool, agent=agent.message_name, findings=findings, subject=subject)


def write_tool_playbook(
    parts: AgentParts, tool: AgentTool, *, agent: str | None, findings: Findings, subject: str
) -> str:
    """The playbook of one tool; its name in the agent."""
    name = parts.namer.take(camel_case(tool.name), "Tool")
    kept = sorted({parameter for parameter, _ in tool.parameters} & KEPT_VARIABLES)
    if kept:
        findings.add(
            TOOL_WITHOUT_IMPORT_PATH,
            f"{subject}, tool {tool.name!r}",
            f"its argument {', '.join(kept)} has the name of a variable the imported agent keeps; rename it",
        )
    arguments = (
        "{" + ", ".join(f"{literal(parameter)}: ${parameter}" for parameter, _ in tool.parameters) + "}"
    )
    call = [
        "tools=$tool_node",
        f"name={literal(tool.name)}",
        "arguments=$tool_arguments",
        "state=$tool_state",
        "results=$tool_results",
        "graph_run=$graph_run",
    ]
    if tool.optional:
        call.append(f"optional={literal(sorted(tool.optional))}")
    if agent is not None:
        call.append(f"agent={literal(agent)}")
    steps = StepList()
    steps.add("EXE", f"$tool_arguments:dict = {arguments}")
    steps.add("EXE", f"$tool_result:dict = {parts.helper('call_tool')}({', '.join(call)})")
    steps.add("EXE", "$tool_results:list = $tool_results + [$tool_result]")
    steps.add("RET", '$tool_result["content"]')
    parts.playbooks.append(
        Playbook(
            name=name,
            parameters=tuple(
                Parameter(name=parameter, type=kind, default="None" if parameter in tool.optional else None)
                for parameter, kind in tool.parameters
            ),
            returns="str",
            description=safe_description(tool.description) or f"The tool {tool.name}.",
            steps=steps.build(),
        )
    )
    return name


def write_tool_node(
    parts: AgentParts, name: str, doc: str, *, tools: dict[str, str], tool_node: dict, messages_key: str
) -> Playbook:
    """The playbook of a ToolNode node: the last AI message's tool calls, each a call of its tool playbook."""
    steps = StepList()
    steps.add("EXE", f"$tool_node:dict = {literal(tool_node)}")
    steps.add("EXE", "$tool_state:dict = $node_state")
    steps.add("EXE", "$tool_results:list = []")
    arguments = f"state=$node_state, tools={literal(tools)}"
    if messages_key != "messages":
        arguments += f", messages_key={literal(messages_key)}"
    steps.add("EXE", f"$node_update = {parts.helper('run_tool_calls')}({arguments})")
    steps.add("RET", "$node_update")
    description = (
        f"{doc} It is a ToolNode: each tool call of the last AI message is a call of the tool's playbook, in "
        "order, and the tool messages are its update, as LangGraph's ToolNode returns them."
    )
    return Playbook(
        name=name,
        parameters=(Parameter(name="node_state", type="dict"),),
        returns="dict",
        description=safe_description(description),
        steps=steps.build(),
    )


__all__ = ["MODEL_PLAYBOOK", "TURN_PLAYBOOK", "write_agent_turn", "write_tool_node", "write_tool_playbook"]
