"""The playbooks of an LLM agent: its turn (`Run`'s steps), the model's react playbook, its tools and
its transfers.

    01:EXE $turn:int = EventCount(session=$session)
    02:EXE $instruction:str = Instruction(session=$session, agent="weather", template="You help in {city?}.")
    03:EXE $conversation:list = Conversation(session=$session, include_contents="default")
    04:EXE $transfer:str = ""
    05:EXE $reply = Respond(instruction=$instruction, conversation=$conversation)
    06:CND If $transfer == "billing"                  one branch per agent it may transfer to
      06.01:EXE $session:dict = Billing.Run(session=$session)
      06.02:JMP 08
    07:EXE $session:dict = AgentReply(session=$session, agent="weather", reply=$reply, output_key="answer", since=$turn)

`Respond` is a react playbook: the model follows the instruction, may call the agent's tools (its
other playbooks) and `TransferToAgent`, and returns its reply. A tool that is a plain function is a
Python playbook bound to it; a tool that needs ADK (a `ToolContext`, a tool class, `exit_loop`) is a
playbook calling `CallTool`, which runs it with a real ToolContext and updates `$session`; an AgentTool
runs the wrapped agent's `Run` in a session of its own (`ToolSession`), then forwards its state changes
(`ToolResult`). The tool playbooks read and write the agent's `$session` variable: PAL variables belong
to the agent, so what a tool changes is what the turn goes on with.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from importers.adk._emit import DONE, RESPOND_PLAYBOOK, TRANSFER_PLAYBOOK, tool_parameters
from importers.adk._model import Agent, Tool, ToolKind
from importers.common.emit import AgentParts, numbered_notes, python_playbook
from importers.common.naming import camel_case, safe_description
from importers.common.steps import StepList, literal
from pal_core.ir import Metadata, Parameter, Playbook

if TYPE_CHECKING:
    from importers.adk._emit import ProgramWriter


class LlmWriter:
    """Writes one LLM agent's turn and its playbooks."""

    __slots__ = ("agent", "parts", "program")

    def __init__(self, program: ProgramWriter, agent: Agent, parts: AgentParts) -> None:
        self.program = program
        self.agent = agent
        self.parts = parts

    def write(self, steps: StepList) -> None:
        agent = self.agent
        helper = self.parts.helper
        name = literal(agent.name)
        steps.add("EXE", f"$turn:int = {helper('event_count')}(session=$session)")
        if agent.instruction is not None and "{" not in agent.instruction:
            steps.add("EXE", f"$instruction:str = {literal(agent.instruction)}")
        elif agent.instruction is not None:
            steps.add(
                "EXE",
                f"$instruction:str = {helper('instruction')}(session=$session, agent={name}, "
                f"template={literal(agent.instruction)})",
            )
        else:
            steps.add(
                "EXE",
                f"$instruction:str = {helper('instruction')}(session=$session, agent={name}, "
                f"source={self.program.source_literal()}, path={literal(agent.path)})",
            )
        steps.add(
            "EXE",
            f"$conversation:list = {helper('conversation')}(session=$session, "
            f"include_contents={literal(agent.include_contents)})",
        )
        targets = [target for target in agent.transfer_targets if target in self.program.by_adk_name]
        if targets:
            steps.add("EXE", '$transfer:str = ""')
        steps.add("EXE", f"$reply = {RESPOND_PLAYBOOK}(instruction=$instruction, conversation=$conversation)")
        for target in targets:
            body = StepList()
            body.add(
                "EXE",
                f"$session:dict = {self.program.call(self.program.by_adk_name[target])}(session=$session)",
            )
            body.jump(DONE)
            steps.branch(f"If $transfer == {literal(target)}", body)
        arguments = f"session=$session, agent={name}, reply=$reply"
        if agent.output_key:
            arguments += f", output_key={literal(agent.output_key)}"
        steps.add("EXE", f"$session:dict = {helper('agent_reply')}({arguments}, since=$turn)")
        if any(tool.asks_itself for tool in agent.tools):
            self._resume(steps, arguments)
        self.parts.main.append(self._respond(targets))
        for tool in agent.tools:
            self.parts.playbooks.append(self._tool(tool))
        if targets:
            self.parts.playbooks.append(self._transfer(targets))

    def _resume(self, steps: StepList, reply_arguments: str) -> None:
        """Tool calls that asked for the user's confirmation are resumed with the answer after the turn, and
        the model answers again with their results, as ADK resumes a paused invocation."""
        helper = self.parts.helper
        source = self.program.source_literal()
        steps.label("resume")
        steps.add(
            "EXE",
            f"$resumed:dict = {helper('resume_tools')}(session=$session, source={source}, "
            f"path={literal(self.agent.path)})",
        )
        steps.add("EXE", '$session:dict = $resumed["session"]')
        body = StepList()
        body.add("EXE", f"$turn = {helper('event_count')}(session=$session)")
        body.add(
            "EXE",
            f"$conversation = {helper('conversation')}(session=$session, "
            f"include_contents={literal(self.agent.include_contents)})",
        )
        body.add("EXE", '$conversation = $conversation + $resumed["results"]')
        body.add("EXE", f"$reply = {RESPOND_PLAYBOOK}(instruction=$instruction, conversation=$conversation)")
        body.add("EXE", f"$session = {helper('agent_reply')}({reply_arguments}, since=$turn)")
        body.jump("resume")
        steps.branch('If $resumed["results"] != []', body)

    # --- the model's turn ------------------------------------------------------------------------

    def _respond(self, targets: list[str]) -> Playbook:
        agent = self.agent
        if agent.instruction:
            text = agent.instruction
        elif agent.dynamic_instruction:
            text = f"(The instruction is computed for each turn, from {agent.dynamic_instruction}.)"
        else:
            text = f"You are the agent {agent.name}."
        notes = [
            "$instruction is your instruction for this turn, with its {key} references filled from the session "
            "state: follow it.",
            "$conversation is the conversation so far, oldest first, as `author: text` lines: answer its last "
            "message, calling your tools (the other playbooks of this agent) when they help.",
            "Return your reply to the user as text."
            if agent.output_schema is None
            else "Return your reply as a JSON object that fits this playbook's returns_schema: Return[{...}].",
        ]
        if targets:
            notes.append(
                f"When another agent should answer, call {TRANSFER_PLAYBOOK}(agent_name=...) and return an empty "
                "reply: that agent answers instead of you."
            )
        return Playbook(
            name=RESPOND_PLAYBOOK,
            parameters=(
                Parameter(name="instruction", type="str"),
                Parameter(name="conversation", type="list"),
            ),
            returns="str" if agent.output_schema is None else "dict",
            description=safe_description(text),
            metadata=Metadata(execution_mode="react", returns_schema=agent.output_schema),
            notes=numbered_notes(notes),
        )

    def _transfer(self, targets: list[str]) -> Playbook:
        lines = ["Transfer the conversation to another agent, which then answers the user:"]
        for target in targets:
            description = self.program.by_adk_name[target].description.strip()
            lines.append(f"- {target}: {description}" if description else f"- {target}")
        steps = StepList()
        steps.add(
            "EXE",
            f"$transfer:str = {self.parts.helper('transfer_target')}(agent_name=$agent_name, targets={literal(targets)})",
        )
        steps.add("RET", "$transfer")
        return Playbook(
            name=TRANSFER_PLAYBOOK,
            parameters=(Parameter(name="agent_name", type="str"),),
            returns="str",
            description=safe_description("\n".join(lines)),
            steps=steps.build(),
        )

    # --- tools -----------------------------------------------------------------------------------

    def _tool(self, tool: Tool) -> Playbook:
        name = self.parts.namer.take(camel_case(tool.name), "Tool")
        description = safe_description(tool.description) or f"The ADK tool `{tool.name}`."
        parameters = tool_parameters(tool)
        if tool.requires_approval:
            description += (
                "\n\nADK asks the user to confirm each call (require_confirmation=True): the call waits for the "
                "user's approval."
            )
        elif tool.confirms:
            description += (
                "\n\nADK may ask the user to confirm a call (it decides per call); the answer resumes it."
            )
        elif tool.asks_itself:
            description += (
                "\n\nIt may ask the user to confirm: its first result comes back to you, and after your reply the "
                "call is resumed with the user's answer."
            )
        approval = Metadata(requires_approval=True) if tool.requires_approval else None
        if tool.kind is ToolKind.FUNCTION:
            playbook = python_playbook(
                name=name,
                path=tool.function,
                parameters=parameters,
                returns=tool.returns,
                description=description,
            )
            if approval is None:
                return playbook
            return replace(playbook, metadata=replace(playbook.metadata, requires_approval=True))
        helper = self.parts.helper
        steps = StepList()
        if tool.kind is ToolKind.ADK:
            arguments = "{" + ", ".join(f"{literal(p.name)}: ${p.name}" for p in parameters) + "}"
            steps.add("EXE", f"$tool_arguments:dict = {arguments}")
            confirmed = ", confirmed=True" if tool.requires_approval else ""
            steps.add(
                "EXE",
                f"$tool_call:dict = {helper('call_tool')}(session=$session, source={self.program.source_literal()}, "
                f"path={literal(self.agent.path)}, tool={literal(tool.name)}, arguments=$tool_arguments{confirmed})",
            )
            steps.add("EXE", '$session:dict = $tool_call["session"]')
            if tool.long_running:
                steps.add("EXE", '$pending = $tool_call["result"]')
                steps.add("QUE", 'Say("user", $pending)')
                steps.add("EXE", '$answer = WaitForMessage("human")')
                steps.add("EXE", f"$tool_result = {helper('message_text')}(message=$answer)")
                steps.add("RET", "$tool_result")
                description += (
                    "\n\nA long-running tool: its first result is said to the user, and the user's answer is "
                    "the tool's result."
                )
            else:
                steps.add("RET", '$tool_call["result"]')
        elif tool.kind is ToolKind.AGENT and tool.agent is not None:
            names = [parameter.name for parameter in parameters]
            if names == ["request"]:
                request = "$request"
            else:
                steps.add(
                    "EXE", "$tool_arguments:dict = {" + ", ".join(f"{literal(n)}: ${n}" for n in names) + "}"
                )
                request = "$tool_arguments"
            steps.add(
                "EXE", f"$tool_session:dict = {helper('tool_session')}(session=$session, request={request})"
            )
            steps.add("EXE", f"$tool_session:dict = {self.program.call(tool.agent)}(session=$tool_session)")
            skip = ", skip_summarization=True" if tool.skip_summarization else ""
            steps.add(
                "EXE",
                f"$tool_call:dict = {helper('tool_result')}(session=$session, child=$tool_session, "
                f"agent={literal(self.agent.name)}{skip})",
            )
            steps.add("EXE", '$session:dict = $tool_call["session"]')
            steps.add("RET", '$tool_call["result"]')
        else:
            subject = f"tool {tool.name!r} of agent {self.agent.name!r}"
            steps.add(
                "EXE",
                f"{helper('unsupported')}(subject={literal(subject)}, reason={literal(tool.reason)})",
            )
            steps.add("RET")
        return Playbook(
            name=name,
            parameters=parameters,
            returns="Any",
            description=description,
            metadata=approval or Metadata(),
            steps=steps.build(),
        )
