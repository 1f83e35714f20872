"""React playbooks (`execution_mode: react`): instructions without numbered steps, run by the model in rounds.

Each round is described once (pal_core.contract.react.describe_react: the tools and their parameter types,
the value the playbook returns, the variables that exist); the prompt, the model's turn shaping (the bundled
model's grammar and example answers) and the verifier all read that description. A round's answer calls
tools (`yld call`: the runtime runs them and asks again with their results), answers (`Return[...]`, `yld
return`), or asks the user (`Say("user", ...)`, `yld user`). Nothing of an answer runs before the verifier has
accepted all of it; a rejected answer is asked again with the broken rules named.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pal_core.contract import ContractSyntaxError, parse_answer
from pal_core.contract.react import ReactTurn, VerifiedRound, call_key, describe_react, verify_react
from pal_core.contract.verify import ContractViolation
from pal_core.ir import Playbook, YieldKind
from runtime.calls import invoke_call
from runtime.errors import CallError, PlaybookFailed, RunError
from runtime.expressions import coerce
from runtime.models.base import ChatMessage, ModelRequest, RequestKind, TurnShape
from runtime.schema import json_value, schema_problems
from runtime.support_modules import is_support_binding
from runtime.turns import ask_approval

if TYPE_CHECKING:
    from runtime.execution import Execution

REACT_SYSTEM = """You run a playbook that has no numbered steps: follow its instructions. Each answer is one \
round, in exactly this format:

plan – <one sentence: what you do now>
then one of:
- calls of the listed tools, each on its own line in backticks (`$weather = GetWeather(city="Paris")`), \
then `yld call`: the runtime runs them and shows you their results;
- `Return[<the playbook's value>]` (the value, or `$name` of a result you have), then `yld return`;
- `Say("user", "<question>")` then `yld user`: the runtime waits for the user's answer.

Arguments are literals or $variables. Call only the listed tools, with their parameters. Write nothing after \
the yld line."""

REACT_SYSTEM_UNDER_GRAMMAR = """You run a playbook that has no numbered steps: follow its instructions. Answer \
in exactly the format of the example answers: call the tools you need (then yld call), or give the \
playbook's value (Return, then yld return)."""
"""The system prompt when a grammar enforces the format (the bundled model)."""


async def react_loop(execution: Execution, playbook: Playbook) -> Any:
    """Run a react playbook to its value, round by round."""
    services = execution.services
    agent = execution.agent
    limits = services.limits
    history: list[ChatMessage] = []
    made: set[str] = set()
    """Variables the rounds set (call results, Var lines): with the parameters, the state a round reads."""
    called: list[str] = []
    """The calls the rounds made (their results, or failures, are known)."""
    for round_number in range(1, limits.max_react_rounds + 1):
        turn = react_turn(execution, playbook, round_number, made, called)
        shape = services.shaping.shape(turn) if services.shaping is not None else TurnShape()
        messages = react_messages(execution, turn, shape, history)
        attempts = 0
        while True:
            request = ModelRequest(
                kind=RequestKind.REACT,
                messages=tuple(messages),
                max_tokens=limits.answer_tokens(RequestKind.REACT),
                temperature=limits.temperature,
                seed=limits.seed,
                grammar=shape.grammar,
                metadata={"agent": agent.klass, "playbook": playbook.name, "mode": "react"},
            )
            call_id, response = await services.call_model(request, agent)
            text = response.text
            try:
                verified = verify_react(parse_answer(text), turn)
            except ContractSyntaxError as error:
                problems = [f"{error.code} answer line {error.line}: {error.message}"]
            except ContractViolation as error:
                problems = [violation.format() for violation in error.violations]
            else:
                problems = returned_problems(verified, playbook, agent.state.variables)
                if not problems:
                    break
            attempts += 1
            services.trace(
                agent, "violation", playbook=playbook.name, model_call=call_id, detail="; ".join(problems)
            )
            if attempts > limits.max_retries:
                raise RunError(
                    f"the model broke the react contract {attempts} times in a row; last: {'; '.join(problems)}",
                    agent=agent.klass,
                    playbook=playbook.name,
                    violations=tuple(problems),
                    answer=text,
                )
            listed = "\n".join(f"- {problem}" for problem in problems)
            messages = [
                *messages,
                ChatMessage(role="assistant", content=text),
                ChatMessage(
                    role="user",
                    content=f"Your answer was rejected; nothing of it ran:\n{listed}\nAnswer again.",
                ),
            ]
        agent.unread.clear()  # the model has seen them
        made.update(update.name for update in verified.updates)
        made.update(call.result.name for call in verified.calls if call.result is not None)
        results, done, value = await apply_round(execution, playbook, verified, call_id, called)
        if done:
            return value
        history += [ChatMessage(role="assistant", content=text), ChatMessage(role="user", content=results)]
    raise RunError(
        f"react playbook did not return within {limits.max_react_rounds} rounds",
        agent=agent.klass,
        playbook=playbook.name,
    )


def react_turn(
    execution: Execution, playbook: Playbook, round_number: int, made: set[str], called: list[str]
) -> ReactTurn:
    """The description of the playbook's next round, from what the run knows live: the state it reads is
    the playbook's parameters and what its rounds set (not the rest of the agent's variables)."""
    agent = execution.agent
    variables = agent.state.variables
    read = [parameter.name for parameter in playbook.parameters if parameter.name in variables]
    read += sorted(name for name in made if name in variables and name not in read)
    return describe_react(
        agent.ir,
        playbook,
        playbooks=agent.playbooks.values(),
        plumbing=_plumbing,
        variables={name: variables.type_of(name) for name in read},
        values={name: variables[name] for name in read},
        waits_for_user=execution.services.user.reachable(agent),
        heard=[message.content for message in agent.unread],
        round=round_number,
        final=round_number >= execution.services.limits.max_react_rounds,
        called=called,
    )


def _plumbing(playbook: Playbook) -> bool:
    """The run-time support of an imported program (`python: pal.adk:...`): not a tool of its react playbooks."""
    return bool(playbook.metadata.python) and is_support_binding(str(playbook.metadata.python))


def react_messages(
    execution: Execution, turn: ReactTurn, shape: TurnShape, history: list[ChatMessage]
) -> list[ChatMessage]:
    """The prompt of a round: the playbook's instructions, its tools, the state, the examples (under a
    grammar), then the rounds so far. What stays the same every round comes first (prompt reuse)."""
    agent = execution.agent
    playbook = turn.playbook
    parts = [f"# Agent {agent.klass}"]
    if agent.ir.description:
        parts.append(agent.ir.description)
    instructions = [playbook.description.strip()] if playbook.description.strip() else []
    instructions += [f"{note.id} {note.text}" for note in playbook.notes]
    parts.append(f"## Playbook {playbook.name}\n" + ("\n".join(instructions) or "(no instructions)"))
    if turn.tools:
        lines = []
        for tool in turn.tools.values():
            approval = " (needs the user's approval)" if tool.requires_approval else ""
            lines.append(f"- {tool.signature}" + (f": {tool.summary}" if tool.summary else "") + approval)
        parts.append("## Tools\n" + "\n".join(lines))
    else:
        parts.append("## Tools\n(none: answer with Return[...])")
    schema = playbook.metadata.returns_schema
    if schema is not None:
        shown = json.dumps(schema, ensure_ascii=False)
        parts.append(f"## Value\n{playbook.name} returns a JSON object that fits this JSON Schema: {shown}")
    elif playbook.returns:
        parts.append(f"## Value\n{playbook.name} returns {playbook.returns}.")
    if shape.examples:
        parts.append("## Example answers (format only)\n" + shape.examples)
    stable_chars = len("\n\n".join(parts)) + 2
    parts.append("## State\n" + _state(turn))
    if agent.unread:
        parts.append(
            "## New messages\n"
            + "\n".join(f"- from {message.sender_klass}: {message.content}" for message in agent.unread)
        )
    parts.append(f"## Your task\nRound {turn.round} of {playbook.name}: call tools, or give its value.")
    system = REACT_SYSTEM_UNDER_GRAMMAR if shape.grammar is not None else REACT_SYSTEM
    return [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content="\n\n".join(parts), stable_chars=stable_chars),
        *history,
    ]


def _state(turn: ReactTurn) -> str:
    rows = []
    for name, value in turn.values.items():
        declared = turn.variables.get(name)
        rows.append(f"- ${name}{':' + declared if declared else ''} = {_shown(value)}")
    return "Variables:\n" + ("\n".join(rows) if rows else "- (none)")


def _shown(value: Any, limit: int = 600) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def apply_round(
    execution: Execution, playbook: Playbook, verified: VerifiedRound, call_id: int, made: list[str]
) -> tuple[str, bool, Any]:
    """Apply a verified round: its Var lines, what it says, its calls in order, adding the calls that ran to
    `made`; (the results as the next round reads them, whether the playbook is done, its value)."""
    agent = execution.agent
    variables = agent.state.variables
    for update in verified.updates:
        variables.set(
            update.name,
            coerce(_value_of(update.raw, update.value, variables), variables.type_of(update.name)),
        )
    for message in verified.said:
        await execution.say("user", message)
    results: list[str] = []
    for call in verified.calls:
        if call.name in verified.approvals and not await ask_approval(
            execution, call, call_id, playbook=playbook.name
        ):
            results.append(f"{call.name} did not run: the user did not approve it")
            continue
        made.append(call_key(call))  # made, whatever it returns: the same call again would do the same
        try:
            result = await invoke_call(execution, call)
        except (PlaybookFailed, CallError) as error:
            # A tool that fails tells the model why, as a tool result (LangGraph's ToolNode, AutoGen and the
            # ADK do the same): the next round can call something else, or answer.
            results.append(f"{call.name} failed: {str(error).splitlines()[0]}")
            continue
        results.append(
            f"{call.name} returned {_shown(result)}" + (f" (now ${call.result.name})" if call.result else "")
        )
    if results:
        results.append(
            "Answer with Return[...] when this answers the playbook's question, or call another tool."
        )
    if verified.yield_target is YieldKind.RETURN:
        returned = verified.returned
        value = _value_of(returned.raw, returned.value, variables) if returned is not None else None
        return "", True, coerce(value, playbook.returns)
    if verified.yield_target is YieldKind.USER:
        answer = await execution.wait_for_user()
        results.append(f"The user answered: {answer}")
    return "\n".join(results) or "No calls were made.", False, None


def returned_problems(verified: VerifiedRound, playbook: Playbook, variables: Any) -> list[str]:
    """V22: a value that does not fit the playbook's `returns_schema` (a structured reply), each problem
    naming the field. Checked here, after the contract's own rules, because JSON Schema is the runtime's
    (pal_core checks types, not schemas); the round is rejected and asked again, as LangGraph's and the
    ADK's structured output ask the model again with the validation error."""
    schema = playbook.metadata.returns_schema
    if schema is None or verified.yield_target is not YieldKind.RETURN:
        return []
    returned = verified.returned
    span = returned.span if returned is not None else None
    where = f"answer line {span.line}: " if span is not None else ""
    title = schema.get("title") or "the playbook's returns_schema"
    if returned is None or not returned.raw.strip():
        return [f"V22 {where}Return[...] needs a value with the fields of {title}"]
    value = json_value(_value_of(returned.raw, returned.value, variables))
    return [
        f"V22 {where}the value does not fit {title}: {problem}"
        for problem in schema_problems(value, schema, "value")
    ]


def _value_of(raw: str, value: Any, variables: Any) -> Any:
    text = raw.strip()
    if text.startswith("$") and text[1:] in variables:
        return variables[text[1:]]
    return value
