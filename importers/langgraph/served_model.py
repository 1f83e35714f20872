"""A node's chat model, served by the run's model: LangChain chat calls answered by PAL's model layer.

Where a node of an imported graph calls a chat model inside its Python (`llm.invoke(...)`,
`llm.bind_tools(tools).invoke(...)`, `llm.with_structured_output(Plan).invoke(...)`, a model made inside
the node by `init_chat_model`, even for a provider whose package is not installed), PAL cannot turn the
call into a playbook, but it can answer it: while `run_node` runs the node (`serving`), every LangChain chat
model call it makes is answered by the run's model (`pal run --model`, the bundled local model by default), counted against the run's budget and kept by
its recorder. The node's own model object is reached without editing the user's code: LangChain sends every
chat call through `BaseChatModel._generate_with_cache` / `_agenerate_with_cache`, which `install` wraps
once; the wrapper answers from the run's model while a node is being served and leaves every other call
alone. Streaming is turned off while served, so `.stream()` comes back through the same door. A chat
model called inside an imported program where no node is being served (a plain node whose call the import
did not see) is refused with an error, never sent to the provider the user did not name.

The run's model sees the chat as a conversation and answers in PAL's react format: tool calls as inline
calls (`` `$r1 = get_weather(city="Paris")` `` then `yld call`), a reply as `Return["..."]` then `yld return`;
structured output (`with_structured_output`, one tool the model must call, or a JSON `response_format`) as
`Return[{...}]` with the schema's fields. A model that decodes under a grammar (the bundled model) gets one
admitting exactly those answers (importers.langgraph.chat_grammar). An answer that breaks the format, names an unknown tool or does not
fit a forced tool's schema is refused and asked again (the run's retries), like a react round; text in
no format at all is taken as a plain reply where a reply is allowed.
`RunChatModel` is the same thing as a chat model of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import json
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from importers.langgraph import pal_run
from pal_core.contract import ContractSyntaxError, StrayCallAction, parse_answer
from pal_core.contract.model import ReturnAction, StepAction
from pal_core.errors import PalError
from pal_core.ir import ArgKind, YieldKind
from runtime.errors import RunError
from runtime.models.base import ChatMessage, ModelRequest, RequestKind
from runtime.schema import schema_problems

RULES = """Answer in this format. To call tools, write each call on a line of its own as an inline call in \
backticks, for example `$r1 = get_weather(city="Paris")`, then `yld call` on the last line; you will see \
what they returned. To reply, write `Return["your reply"]` then `yld return`."""

REPLY_RULES = """Answer with `Return["your reply"]` then `yld return`."""

STRUCTURED_RULES = """Answer with `Return[{{...}}]` holding a JSON object with the fields of {name}, then `yld \
return`. Its JSON Schema: {schema}"""


class ServedModelError(PalError):
    """A chat model was called inside an imported program where the run's model cannot answer it."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool a served chat call may call, in OpenAI's function form."""

    name: str
    """The tool's name."""
    description: str
    """What it does."""
    parameters: Mapping[str, Any]
    """Its arguments' JSON Schema."""

    def signature(self) -> str:
        properties = self.parameters.get("properties") or {}
        required = set(self.parameters.get("required") or ())
        parts = [
            f"{key}: {spec.get('type', 'any') if isinstance(spec, Mapping) else 'any'}"
            + ("" if key in required else " (optional)")
            for key, spec in properties.items()
        ]
        return f"{self.name}({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class ChatCall:
    """One chat call to answer: the messages, the tools it may call, and what it must give."""

    messages: tuple[Any, ...]
    """LangChain messages."""
    tools: tuple[ToolSpec, ...] = ()
    """Tools the model may call."""
    forced: str | None = None
    """The tool it must call (one tool with a forced choice: structured output), else None."""
    must_call: bool = False
    """Whether it must call some tool (`tool_choice="any"`)."""
    json_schema: Mapping[str, Any] | None = None
    """A JSON `response_format`: the reply is a JSON object of this schema (`{}`: any object)."""


# --- the request -----------------------------------------------------------------------------------


def chat_call(messages: Sequence[Any], kwargs: Mapping[str, Any]) -> ChatCall:
    """What a LangChain chat call asks for, from its messages and the keywords the model's `bind_tools` /
    `with_structured_output` bound (tools in any provider's form, `tool_choice`, `response_format`)."""
    from langchain_core.utils.function_calling import convert_to_openai_tool

    tools = []
    for tool in [*(kwargs.get("tools") or ()), *(kwargs.get("functions") or ())]:
        spec = convert_to_openai_tool(tool)["function"]
        tools.append(
            ToolSpec(
                name=str(spec["name"]),
                description=str(spec.get("description") or ""),
                parameters=spec.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    choice = _chosen_tool(kwargs.get("tool_choice"))
    must_call = choice in ("any", "required") or (choice is not None and choice not in ("auto", "none"))
    forced = None
    if choice not in (None, "auto", "none", "any", "required"):
        forced = choice
    elif must_call and len(tools) == 1:
        forced = tools[0].name
    if choice == "none":
        tools = []
    return ChatCall(
        messages=tuple(messages),
        tools=tuple(tools),
        forced=forced,
        must_call=must_call,
        json_schema=_response_schema(kwargs.get("response_format")),
    )


def _chosen_tool(choice: Any) -> str | None:
    if choice is None or isinstance(choice, bool):
        return "any" if choice else None
    if isinstance(choice, str):
        return choice
    if isinstance(choice, Mapping):
        function = choice.get("function")
        if isinstance(function, Mapping) and function.get("name"):
            return str(function["name"])
        if choice.get("name"):
            return str(choice["name"])
        if choice.get("type") in ("any", "required"):
            return "any"
    return None


def _response_schema(response_format: Any) -> Mapping[str, Any] | None:
    if response_format is None:
        return None
    if isinstance(response_format, Mapping):
        inner = response_format.get("json_schema")
        if isinstance(inner, Mapping):
            return inner.get("schema") or {}
        return {}
    schema = getattr(response_format, "model_json_schema", None)
    return schema() if callable(schema) else {}


def chat_request(call: ChatCall, limits: Any, who: str) -> ModelRequest:
    """The run's model's request for a chat call: the system prompt and rules, then the conversation."""
    system: list[str] = []
    turns: list[ChatMessage] = []
    for message in call.messages:
        kind = getattr(message, "type", "")
        if kind == "system":
            system.append(_text(message.content))
        elif kind == "ai":
            turns.append(ChatMessage(role="assistant", content=_assistant_text(message)))
        elif kind == "tool":
            name = getattr(message, "name", None) or "the tool"
            turns.append(ChatMessage(role="user", content=f"{name} returned {_text(message.content)!r}"))
        else:
            turns.append(ChatMessage(role="user", content=_text(message.content)))
    forced = _forced_tool(call)
    if forced is not None:
        name = f"{forced.name} ({forced.description})" if forced.description else forced.name
        schema = json.dumps(forced.parameters, ensure_ascii=False)
        rules = [STRUCTURED_RULES.format(name=name, schema=schema)]
    elif call.json_schema is not None:
        schema = json.dumps(call.json_schema, ensure_ascii=False)
        rules = [STRUCTURED_RULES.format(name="the reply", schema=schema)]
    elif call.tools:
        listed = "\n".join(f"- `{tool.signature()}`: {tool.description}".rstrip(": ") for tool in call.tools)
        rules = [RULES, f"Tools you may call:\n{listed}"]
        if call.must_call:
            rules.append("Call at least one tool.")
    else:
        rules = [REPLY_RULES]
    content = "\n\n".join([*(text for text in system if text), *rules])
    return ModelRequest(
        kind=RequestKind.REACT,
        messages=(ChatMessage(role="system", content=content), *turns),
        max_tokens=limits.max_answer_tokens,
        temperature=limits.temperature,
        seed=limits.seed,
        metadata={"playbook": who, "mode": "chat"},
    )


def _forced_tool(call: ChatCall) -> ToolSpec | None:
    return next((tool for tool in call.tools if tool.name == call.forced), None)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(block.get("text", "")) if isinstance(block, Mapping) else str(block)
            for block in content
            if not isinstance(block, Mapping) or block.get("type", "text") == "text"
        ]
        return "\n".join(part for part in parts if part)
    return str(content)


def _assistant_text(message: Any) -> str:
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        lines = [
            f"`$r{index} = {call['name']}({_arguments_text(call.get('args') or {})})`"
            for index, call in enumerate(calls, start=1)
        ]
        return "\n".join([*lines, "yld call"])
    return f"Return[{json.dumps(_text(message.content), ensure_ascii=False)}]\nyld return"


def _arguments_text(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items())


# --- the answer ------------------------------------------------------------------------------------


class _Refused(Exception):
    """An answer the chat call cannot take (the reason is shown to the model when it is asked again)."""


def read_chat_answer(text: str, call: ChatCall) -> Any:
    """The AIMessage an answer in the react format makes for `call` (_Refused saying why it cannot)."""
    from langchain_core.messages import AIMessage

    try:
        answer = parse_answer(text)
    except ContractSyntaxError as error:
        # Text in no format is a chat model's plain reply, where a reply is allowed (no tool or schema
        # forced) and the text does not look like a call that went wrong.
        if call.forced or call.must_call or call.json_schema is not None or not text.strip() or "`" in text:
            raise _Refused(str(error).splitlines()[0]) from None
        return AIMessage(content=text.strip())
    calls: list[dict[str, Any]] = []
    returned: ReturnAction | None = None
    for action in answer.actions:
        found = ()
        if isinstance(action, StrayCallAction):
            found = (action.call,)
        elif isinstance(action, StepAction):
            found = action.calls
        elif isinstance(action, ReturnAction):
            returned = action
        for found_call in found:
            calls.append(_tool_call(found_call, call))
    final = answer.final_yield
    kind = final.target.kind if final is not None else None
    if calls:
        if kind is not YieldKind.CALL:
            raise _Refused("end the calls with yld call")
        return AIMessage(content="", tool_calls=calls)
    if returned is None or kind is not YieldKind.RETURN:
        raise _Refused("end with yld call (after tool calls) or yld return (after Return[...])")
    forced = _forced_tool(call)
    if forced is not None:
        if not isinstance(returned.value, Mapping):
            raise _Refused(f"Return[...] must hold a JSON object with the fields of {forced.name}")
        arguments = _checked(dict(returned.value), forced)
        return AIMessage(content="", tool_calls=[_new_call(forced.name, arguments)])
    if call.must_call:
        raise _Refused("call at least one tool")
    if call.json_schema is not None:
        if not isinstance(returned.value, Mapping):
            raise _Refused("Return[...] must hold a JSON object")
        return AIMessage(content=json.dumps(returned.value, ensure_ascii=False))
    value = returned.value
    return AIMessage(content=value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def _tool_call(found: Any, call: ChatCall) -> dict[str, Any]:
    tool = next((tool for tool in call.tools if tool.name == found.name), None)
    if tool is None:
        known = ", ".join(tool.name for tool in call.tools) or "none"
        raise _Refused(f"{found.name} is not a tool you can call (tools: {known})")
    order = list((tool.parameters.get("properties") or {}).keys())
    arguments: dict[str, Any] = {}
    for index, argument in enumerate(found.arguments):
        if argument.kind is not ArgKind.LITERAL:
            raise _Refused(f"argument {argument.text!r} of {found.name} must be a literal value")
        key = argument.name
        if key is None:
            if index >= len(order):
                raise _Refused(f"{found.name} takes {len(order)} arguments")
            key = order[index]
        arguments[key] = argument.value
    return _new_call(tool.name, _checked(arguments, tool))


def _checked(arguments: dict[str, Any], tool: ToolSpec) -> dict[str, Any]:
    """`arguments` if they fit the tool's JSON Schema (types, enums, required fields, no unknown ones)."""
    properties = tool.parameters.get("properties") or {}
    problems = schema_problems(arguments, tool.parameters)
    problems += [f"{key} is not an argument" for key in arguments if properties and key not in properties]
    if problems:
        raise _Refused(f"{tool.name}: {'; '.join(dict.fromkeys(problems))}")
    return arguments


def _new_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": arguments, "id": f"call_{uuid.uuid4().hex[:24]}", "type": "tool_call"}


async def answer_chat(running: Any, call: ChatCall, who: str) -> Any:
    """The run's model's answer to a chat call, as an AIMessage; a refused answer is asked again with the
    reason, at most the run's retries, then RunError quoting it."""
    limits = pal_run.limits(running)
    request = chat_request(call, limits, who)
    if pal_run.takes_grammar(running):
        from importers.langgraph.chat_grammar import chat_grammar

        request = dataclasses.replace(request, grammar=chat_grammar(call))
    failures = 0
    while True:
        response = await pal_run.ask_model(running, request)
        try:
            message = read_chat_answer(response.text, call)
        except _Refused as refused:
            failures += 1
            if failures > limits.max_retries:
                raise RunError(
                    f"the model's answer to a chat call of {who} was refused: {refused}",
                    agent=pal_run.agent_name(running),
                    answer=response.text,
                ) from None
            request = ModelRequest(
                kind=request.kind,
                messages=(
                    *request.messages,
                    ChatMessage(role="assistant", content=response.text),
                    ChatMessage(role="user", content=f"Rejected: {refused}. Answer again."),
                ),
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
                grammar=request.grammar,
                metadata=request.metadata,
            )
            continue
        usage = response.usage
        if usage.prompt_tokens or usage.completion_tokens:
            message.usage_metadata = {
                "input_tokens": usage.prompt_tokens,
                "output_tokens": usage.completion_tokens,
                "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            }
        message.response_metadata = {"model_name": response.model}
        return message


# --- serving a node --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Serving:
    """The node being served now: its PAL execution and the event loop its model calls run on."""

    running: Any
    """The Execution of the node's call."""
    loop: asyncio.AbstractEventLoop
    """The run's event loop."""
    who: str
    """What is served, for prompts and errors (`node 'agent'`)."""

    async def agenerate(self, messages: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        message = await answer_chat(self.running, chat_call(messages, kwargs), self.who)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def generate(self, messages: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if _on_loop(self.loop):
            raise ServedModelError(
                f"{self.who} called a chat model synchronously on the run's event loop, where the run's model "
                "cannot answer it; make the function async (await model.ainvoke(...)), or import the graph again "
                "so the node is run as a node that calls a model"
            )
        return asyncio.run_coroutine_threadsafe(self.agenerate(messages, kwargs), self.loop).result()


_SERVED: contextvars.ContextVar[_Serving | None] = contextvars.ContextVar(
    "pal_langgraph_served", default=None
)


@contextlib.contextmanager
def serving(running: Any, who: str) -> Iterator[None]:
    """Serve every LangChain chat model called inside the block (and in the worker threads it starts with
    its context) by the run's model of `running`; outside a PAL run (`running` None), change nothing."""
    if running is None:
        yield
        return
    install()
    token = _SERVED.set(_Serving(running, asyncio.get_running_loop(), who))
    try:
        yield
    finally:
        _SERVED.reset(token)


def _served() -> _Serving | None:
    """Who answers a chat call made now: the node being served; None outside imported programs. A call
    inside an imported program where nothing is served is refused (it would reach the node's own
    provider)."""
    served = _SERVED.get()
    if served is not None:
        return served
    running = pal_run.execution_or_none()
    if running is not None and pal_run.binds_support(running, "langgraph"):
        raise ServedModelError(
            f"agent {pal_run.agent_name(running)} called a chat model where the import did not see one (a node "
            "run as a plain Python playbook); it was not sent to the model's provider. Import the graph again: "
            "nodes that call a model are run with the run's model serving them"
        )
    return None


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


_INSTALLED = False
_INSTALL_LOCK = threading.Lock()


def install() -> None:
    """Wrap LangChain's chat model entry points once per process, so served nodes' calls reach the run's
    model (a no-op after the first time)."""
    global _INSTALLED
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        from langchain_core.language_models.chat_models import BaseChatModel

        generate = BaseChatModel._generate_with_cache
        agenerate = BaseChatModel._agenerate_with_cache
        should_stream = BaseChatModel._should_stream
        protocol_streaming = getattr(BaseChatModel, "_should_use_protocol_streaming", None)

        def _generate_with_cache(
            self: Any, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            served = _served()
            if served is None:
                return generate(self, messages, stop, run_manager, **kwargs)
            return served.generate(messages, kwargs)

        async def _agenerate_with_cache(
            self: Any, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            served = _served()
            if served is None:
                return await agenerate(self, messages, stop, run_manager, **kwargs)
            return await served.agenerate(messages, kwargs)

        def _should_stream(self: Any, *args: Any, **kwargs: Any) -> bool:
            if _SERVED.get() is not None:
                return False  # served calls answer whole; .stream() falls back to invoke
            return should_stream(self, *args, **kwargs)

        BaseChatModel._generate_with_cache = _generate_with_cache  # type: ignore[method-assign]
        BaseChatModel._agenerate_with_cache = _agenerate_with_cache  # type: ignore[method-assign]
        BaseChatModel._should_stream = _should_stream  # type: ignore[method-assign]
        if protocol_streaming is not None:

            def _should_use_protocol_streaming(self: Any, *args: Any, **kwargs: Any) -> bool:
                if _SERVED.get() is not None:
                    return False
                return protocol_streaming(self, *args, **kwargs)

            BaseChatModel._should_use_protocol_streaming = _should_use_protocol_streaming  # type: ignore[method-assign]
        _serve_model_factory()
        _INSTALLED = True


def _serve_model_factory() -> None:
    """A node that makes its model with `init_chat_model("anthropic:...")` while served gets a RunChatModel:
    the provider's package (and its key) are not needed, since the run's model answers every call anyway.
    `init_chat_model` looks its helper up when called, so graphs that imported `init_chat_model` by name
    are served too; outside a served node the helper is LangChain's own."""
    try:
        from langchain.chat_models import base as chat_models
    except ImportError:  # langchain-core without langchain: no init_chat_model to serve
        return
    make = getattr(chat_models, "_init_chat_model_helper", None)
    if make is None:
        return

    def _init_chat_model_helper(model: str, *, model_provider: str | None = None, **kwargs: Any) -> Any:
        if _SERVED.get() is not None:
            return run_chat_model()
        return make(model, model_provider=model_provider, **kwargs)

    chat_models._init_chat_model_helper = _init_chat_model_helper  # type: ignore[attr-defined]


def run_chat_model() -> Any:
    """`RunChatModel()`: a LangChain chat model answered by the run's model of the node being served (built
    on first use, so importing this module does not import LangChain)."""
    return _run_chat_model_class()()


@functools.cache
def _run_chat_model_class() -> type:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.utils.function_calling import convert_to_openai_tool

    class RunChatModel(BaseChatModel):
        """A chat model answered by the run's model of the node being served (see the module docstring);
        it calls tools (`bind_tools`) and gives structured output (`with_structured_output`)."""

        @property
        def _llm_type(self) -> str:
            return "pal-run-model"

        def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
            bound: dict[str, Any] = {"tools": [convert_to_openai_tool(tool) for tool in tools], **kwargs}
            if tool_choice is not None:
                bound["tool_choice"] = tool_choice
            return self.bind(**bound)

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            return _serving_now("RunChatModel").generate(messages, kwargs)

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            return await _serving_now("RunChatModel").agenerate(messages, kwargs)

    return RunChatModel


def _serving_now(who: str) -> _Serving:
    served = _SERVED.get()
    if served is not None:
        return served
    running = pal_run.execution_or_none()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if running is None or loop is None:
        raise ServedModelError(f"{who} answers only inside a running PAL program (a node being run by it)")
    return _Serving(running, loop, who)
