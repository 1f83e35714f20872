"""The contract of a react round: a playbook without numbered steps (`execution_mode: react`, what an imported
ADK LlmAgent, AutoGen assistant or LangGraph ReAct node is), run by the model in rounds.

`describe_react(...)` is the one description of a round, which the verifier, the prompt (runtime/react.py),
the local grammar and its example answers (runtime/local/react_grammar.py) all read: the tools the playbook
may call with their parameters and types, the value it returns and its type, the variables that exist, and
whether a round may wait for the user. A round's answer is, in the line format of the contract:

    plan – <one sentence>                          (optional, with recap)
    `$weather = GetWeather(city="Paris")`          calls, one per line, then `yld call`: the runtime
    yld call                                       runs them and asks again with their results
or
    Return["It is sunny in Paris."]                the final answer (`Return[$weather]` passes a result)
    yld return
or
    `Say("user", "Which city?")`                   a question to the user, then `yld user`
    yld user

`verify_react(answer, turn)` checks it before anything runs (codes of pal_core.contract.verify where the
rule is the same; V20 for a yld that does not fit what the round does, V21 for a call an earlier round
made, whose result is known) and returns what to apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract.fixed import program_variables
from pal_core.contract.model import Answer, ReturnAction, StepAction, VarAction, YieldAction
from pal_core.contract.parse import StrayCallAction
from pal_core.contract.verify import ContractViolation, Violation
from pal_core.declared_types import fits_type
from pal_core.ir import Agent, ArgKind, Call, JsonValue, Playbook, PlaybookKind, YieldKind

USER_TARGETS = frozenset({"user", "human", "the user"})
"""How a Say names the user."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolParameter:
    """One parameter of a tool."""

    name: str
    """Its name (without `$`)."""
    type: str | None = None
    """Its declared type, if any."""
    required: bool = True
    """Whether a call must pass it (it has no default)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A playbook a react round may call."""

    name: str
    """The name as called."""
    parameters: tuple[ToolParameter, ...] = ()
    """Its parameters, in order."""
    returns: str | None = None
    """The type of what it returns."""
    summary: str = ""
    """One line on what it does."""
    requires_approval: bool = False
    """Whether a human must approve a call before it runs."""

    @property
    def signature(self) -> str:
        """`GetWeather(city: str) -> str`, for the prompt."""
        shown = ", ".join(
            f"{p.name}: {p.type or 'any'}" + ("" if p.required else " (optional)") for p in self.parameters
        )
        return f"{self.name}({shown})" + (f" -> {self.returns}" if self.returns else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReactTurn:
    """Where a react round stands: the one description the verifier, the prompt and the grammar read."""

    agent: str
    """The running agent's class."""
    playbook: Playbook
    """The react playbook."""
    tools: Mapping[str, Tool] = field(default_factory=dict)
    """What the round may call, by name."""
    returns: str | None = None
    """The type of the playbook's value (`Return[...]` must fit it)."""
    variables: Mapping[str, str | None] = field(default_factory=dict)
    """Variables that exist now (name -> declared type or None): what a call may pass as `$name`."""
    values: Mapping[str, JsonValue] = field(default_factory=dict)
    """Their values, where known."""
    program_variables: Mapping[str, str] = field(default_factory=dict)
    """Variables the program sets itself (its parameters among them): a round may not change them."""
    waits_for_user: bool = True
    """Whether a round may ask the user and wait (`yld user`)."""
    heard: tuple[str, ...] = ()
    """The text of the messages the round brings, oldest first."""
    round: int = 1
    """Which round this is (1 for the first)."""
    final: bool = False
    """Whether this is the last round the budget allows: it must give the value."""
    called: tuple[str, ...] = ()
    """The calls earlier rounds made (`call_key`): their results are known, so no round makes them again."""


def describe_react(
    agent: Agent,
    playbook: Playbook,
    *,
    playbooks: Iterable[Playbook] | None = None,
    plumbing: Callable[[Playbook], bool] = lambda playbook: False,
    variables: Mapping[str, str | None] | None = None,
    values: Mapping[str, JsonValue] | None = None,
    waits_for_user: bool = True,
    heard: Iterable[str] = (),
    round: int = 1,
    final: bool = False,
    called: Iterable[str] = (),
) -> ReactTurn:
    """The ReactTurn of `playbook` of `agent`. `playbooks` are the agent's playbooks as running (default: the
    program's); `plumbing` tells which of them are the runtime support of an imported program rather than
    tools (the runtime passes its support bindings). The tools are the agent's other playbooks a model may
    call, but for the plumbing and those that call this playbook (directly or through others: the loop that
    runs the round, which calling would start it again)."""
    own = list(playbooks) if playbooks is not None else list(agent.playbooks)
    callers = _callers(own, playbook.name)
    tools: dict[str, Tool] = {}
    for candidate in own:
        if (
            candidate.name == playbook.name
            or candidate.name in callers
            or candidate.metadata.model_callable is False
            or plumbing(candidate)
        ):
            continue
        tools[candidate.name] = Tool(
            name=candidate.name,
            parameters=tuple(
                ToolParameter(name=p.name, type=p.type, required=p.default is None)
                for p in candidate.parameters
            ),
            returns=candidate.returns,
            summary=candidate.description.strip().split("\n", 1)[0] if candidate.description else "",
            requires_approval=bool(candidate.metadata.requires_approval),
        )
    steps = [
        step for candidate in own if candidate.kind is PlaybookKind.MARKDOWN for step in candidate.all_steps()
    ]
    return ReactTurn(
        agent=agent.name,
        playbook=playbook,
        tools=tools,
        returns=playbook.returns,
        variables=dict(variables or {}),
        values=dict(values or {}),
        program_variables=program_variables(steps, [parameter.name for parameter in playbook.parameters]),
        waits_for_user=waits_for_user,
        heard=tuple(heard),
        round=round,
        final=final,
        called=tuple(called),
    )


def _callers(playbooks: list[Playbook], name: str) -> set[str]:
    """The playbooks whose steps call `name`, directly or through each other."""
    calls: dict[str, set[str]] = {}
    for candidate in playbooks:
        called = set()
        for step in candidate.all_steps():
            if step.call is not None:
                called.add(step.call.name)
        calls[candidate.name] = called
    found: set[str] = set()
    frontier = {name}
    while frontier:
        frontier = {caller for caller, called in calls.items() if called & frontier and caller not in found}
        found |= frontier
    found.discard(name)
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedRound:
    """What a verified react round does, in order."""

    calls: tuple[Call, ...] = ()
    """The tool calls to run (`yld call`), in order."""
    approvals: tuple[str, ...] = ()
    """Tools among them that need a human's approval first."""
    updates: tuple[VarAction, ...] = ()
    """Var lines (notes the round keeps in the agent's variables)."""
    said: tuple[str, ...] = ()
    """What the round says to the user."""
    returned: ReturnAction | None = None
    """The final answer (`yld return`)."""
    yield_target: YieldKind = YieldKind.CALL
    """How the round ends: call, return or user."""


def verify_react(answer: Answer, turn: ReactTurn) -> VerifiedRound:
    """Check a react round's answer; what to apply, or ContractViolation with every broken rule."""
    problems: list[Violation] = []

    def add(code: str, message: str, action: object = None) -> None:
        span = getattr(action, "span", None)
        problems.append(Violation(code=code, message=message, answer_line=span.line if span else None))

    known = set(turn.variables)
    calls: list[Call] = []
    approvals: list[str] = []
    updates: list[VarAction] = []
    said: list[str] = []
    returned: ReturnAction | None = None
    yields = [action for action in answer.actions if isinstance(action, YieldAction)]
    final = yields[-1] if yields else None
    for extra in yields[:-1]:
        add("V15", "only one yld may end a round; remove the earlier one", extra)
    after_final = False
    for action in answer.actions:
        if action is final:
            after_final = True
            continue
        if after_final and not isinstance(action, YieldAction):
            add("V15", "nothing may follow the final yld; end the answer there", action)
            continue
        if isinstance(action, StepAction):
            add(
                "V01",
                f"{turn.playbook.name} has no numbered steps: write each call on a line of its own, in backticks",
                action,
            )
        elif isinstance(action, StrayCallAction):
            call = action.call
            if call.name in SPEECH_CALLS:
                message = _said_to_user(call, known, turn.values)
                if message is None:
                    add("V10", 'a round speaks only to the user: `Say("user", "...")`', action)
                else:
                    said.append(message)
                continue
            if call_key(call) in turn.called or call_key(call) in {call_key(made) for made in calls}:
                add(
                    "V21",
                    f"{call_key(call)} was made already and its result is known: use it, or call something else",
                    action,
                )
                continue
            if _check_call(call, turn, known, add, action):
                calls.append(call)
                if turn.tools[call.name].requires_approval:
                    approvals.append(call.name)
                if call.result is not None:
                    known.add(call.result.name)
        elif isinstance(action, VarAction) and action.name != "__":
            _check_var(action, turn, add)
            updates.append(action)
            known.add(action.name)
        elif isinstance(action, ReturnAction):
            returned = action
            _check_return(action, turn, known, add)
    kind = _check_yield(final, calls, said, returned, turn, add)
    if problems:
        raise ContractViolation(problems, answer.raw)
    return VerifiedRound(
        calls=tuple(calls),
        approvals=tuple(approvals),
        updates=tuple(updates),
        said=tuple(said),
        returned=returned,
        yield_target=kind,
    )


def call_key(call: Call) -> str:
    """A call as its tool and arguments (`FindBook(title="Dune")`), whatever it stores its result in."""
    return f"{call.name}({', '.join((f'{a.name}=' if a.name else '') + a.text for a in call.arguments)})"


def _check_call(call: Call, turn: ReactTurn, known: set[str], add: Callable, action: object) -> bool:
    tool = turn.tools.get(call.name)
    if tool is None:
        listed = ", ".join(sorted(turn.tools)) or "none"
        add("V10", f"{call.name} is not a tool of {turn.playbook.name} (tools: {listed})", action)
        return False
    ok = True
    names = [parameter.name for parameter in tool.parameters]
    given: set[str] = set()
    positional = [argument for argument in call.arguments if argument.name is None]
    if len(positional) > len(names):
        add(
            "V10",
            f"{tool.signature} takes {len(names)} argument(s), the call passes {len(positional)}",
            action,
        )
        return False
    for index, argument in enumerate(call.arguments):
        name = argument.name if argument.name is not None else names[index]
        parameter = next((item for item in tool.parameters if item.name == name), None)
        if parameter is None:
            add("V10", f"{call.name} has no parameter {name} ({tool.signature})", action)
            ok = False
            continue
        given.add(name)
        if argument.kind is ArgKind.VARIABLE:
            if argument.value not in known:
                add("V10", f"argument ${argument.value} of {call.name} is not a known variable", action)
                ok = False
            elif argument.value in turn.values and not _fits(turn.values[argument.value], parameter.type):
                add("V12", f"{call.name}'s {name} is {parameter.type}; ${argument.value} is not", action)
                ok = False
        elif argument.kind is ArgKind.LITERAL:
            if not _fits(argument.value, parameter.type):
                add("V12", f"{call.name}'s {name} is {parameter.type}, not {argument.text}", action)
                ok = False
        else:
            add("V10", f"argument {argument.text!r} of {call.name} must be a literal or a $variable", action)
            ok = False
    missing = [
        parameter.name for parameter in tool.parameters if parameter.required and parameter.name not in given
    ]
    if missing:
        add("V10", f"{call.name} needs {', '.join(missing)} ({tool.signature})", action)
        ok = False
    return ok


def _fits(value: object, declared: str | None) -> bool:
    # null is no value; a number given for a text is taken as its text (R14 in numbered turns).
    if value is None:
        return True
    if (
        declared is not None
        and declared.split("[", 1)[0].strip() == "str"
        and isinstance(value, (int, float))
    ):
        return not isinstance(value, bool)
    return fits_type(value, declared)


def _said_to_user(call: Call, known: set[str], values: Mapping[str, JsonValue]) -> str | None:
    arguments = call.arguments
    if len(arguments) == 1:
        target, message = None, arguments[0]
    elif len(arguments) == 2:
        target, message = arguments
    else:
        return None
    if target is not None:
        word = (
            str(target.value if target.kind is ArgKind.LITERAL else target.text).strip().strip("\"'").lower()
        )
        if word not in USER_TARGETS:
            return None
    if message.kind is ArgKind.LITERAL:
        return str(message.value)
    if message.kind is ArgKind.VARIABLE and message.value in known:
        return str(values.get(str(message.value), ""))
    return None


def _check_var(action: VarAction, turn: ReactTurn, add: Callable) -> None:
    name = action.name
    if name not in turn.program_variables:
        return
    if name in turn.values and turn.values[name] is not None and action.value != turn.values[name]:
        add(
            "V17",
            f"${name} is set by the program ({turn.program_variables[name]}); a round may not change it",
            action,
        )


def _check_return(action: ReturnAction, turn: ReactTurn, known: set[str], add: Callable) -> None:
    raw = action.raw.strip()
    if raw.startswith("$"):
        if raw[1:] not in known:
            add("V10", f"Return[{raw}]: ${raw[1:]} is not a known variable", action)
        return
    if raw and not _fits(action.value, turn.returns):
        add("V12", f"{turn.playbook.name} returns {turn.returns}, not {raw}", action)


def _check_yield(
    final: YieldAction | None,
    calls: list[Call],
    said: list[str],
    returned: ReturnAction | None,
    turn: ReactTurn,
    add: Callable,
) -> YieldKind:
    if final is None:
        add(
            "V06",
            "end the round with yld call (to run your calls), yld return (with Return[...]) or yld user",
        )
        return YieldKind.CALL
    kind = final.target.kind
    if kind is YieldKind.UNKNOWN:
        add("V14", f"unknown yield target {final.target.name!r}; use yld call, yld return or yld user", final)
        return kind
    if kind is YieldKind.CALL and not calls:
        add(
            "V20",
            "yld call runs the calls of the round, and it makes none: call a tool, or Return[...]",
            final,
        )
    elif kind is YieldKind.RETURN:
        if returned is None:
            add("V20", "yld return ends the playbook: write its value first, Return[...]", final)
    elif kind is YieldKind.USER:
        if not turn.waits_for_user:
            add(
                "V11",
                "nobody can answer here: call a tool (yld call) or answer (Return[...], yld return)",
                final,
            )
        elif not said:
            add("V20", 'yld user waits for the user\'s answer: ask first, `Say("user", "...")`', final)
    elif kind not in (YieldKind.CALL, YieldKind.RETURN, YieldKind.USER):
        add("V11", f"a round ends with yld call, yld return or yld user, not yld {kind.value}", final)
    if returned is not None and kind is not YieldKind.RETURN:
        add("V16", "Return[...] ends the playbook: end the round with yld return", returned)
    return kind
