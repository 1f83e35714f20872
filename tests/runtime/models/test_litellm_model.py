"""LiteLLMModel through litellm's real code path, without network: litellm's own `mock_response`, and
custom providers registered through `register_litellm_provider` (the hook the bundled model uses)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from typing import Any

import anyio
import pytest

from runtime.models import (
    LiteLLMModel,
    Model,
    ModelError,
    ModelNotAvailable,
    ModelProviderError,
    ModelTimeout,
    register_litellm_provider,
    request_grammar,
    request_stable_prefix,
)
from runtime.models.base import ChatMessage, ModelRequest
from runtime.models.litellm_model import INSTALL_HINT, import_litellm, registered_litellm_providers
from tests.runtime.models.helpers import SYSTEM, ask

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="needs pal-bridge[llm]"),
]

GRAMMAR = 'root ::= "01:" [A-Z]{3} " " [a-z ]+'
BOUND = 60  # seconds; generous because the first test imports litellm (several seconds)

factory_calls: dict[str, int] = {}


def _handler(behaviour: str) -> Any:
    """A litellm CustomLLM acting out `behaviour`; litellm is imported only when the factory runs."""
    from litellm import CustomLLM

    factory_calls[behaviour] = factory_calls.get(behaviour, 0) + 1

    class Handler(CustomLLM):
        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            model_response = kwargs["model_response"]
            if behaviour == "stuck":
                await asyncio.Event().wait()  # never set: only a timeout ends this call
            if behaviour == "broken":
                raise ValueError("handler broke: the weights file is unreadable")
            if behaviour == "unavailable":
                raise ModelNotAvailable(
                    "the local model needs llama-cpp-python: pip install 'pal-bridge[local]'"
                )
            if behaviour == "silent":
                model_response.choices[0].message.content = None
                return model_response
            seen = {
                "model": kwargs["model"],
                "messages": kwargs["messages"],
                "optional_params": kwargs["optional_params"],
                "grammar": request_grammar(kwargs["optional_params"]),
                "stable_prefix": request_stable_prefix(kwargs["optional_params"]),
            }
            model_response.choices[0].message.content = json.dumps(seen)
            return model_response

    return Handler()


def echo() -> Any:
    return _handler("echo")


def stuck() -> Any:
    return _handler("stuck")


def broken() -> Any:
    return _handler("broken")


def unavailable() -> Any:
    return _handler("unavailable")


def silent() -> Any:
    return _handler("silent")


def plain_echo() -> Any:
    return _handler("plain echo")


def not_a_handler() -> Any:
    return object()


register_litellm_provider("paltest-echo", echo)
register_litellm_provider("paltest-plain", plain_echo, accepts_grammar=False)
register_litellm_provider("paltest-stuck", stuck)
register_litellm_provider("paltest-broken", broken)
register_litellm_provider("paltest-unavailable", unavailable)
register_litellm_provider("paltest-silent", silent)
register_litellm_provider("paltest-bad-factory", not_a_handler)
register_litellm_provider("ollama", echo)  # one of litellm's own names; no other test uses it


async def _seen(model: LiteLLMModel, **settings: Any) -> dict[str, Any]:
    with anyio.fail_after(BOUND):
        response = await model.complete(ask("run step 01", **settings))
    return json.loads(response.text)


async def test_mock_response_goes_through_litellm() -> None:
    model = LiteLLMModel("openai/gpt-4o-mini", extra={"mock_response": "01:SAY Hello"})
    assert isinstance(model, Model)
    with anyio.fail_after(BOUND):
        response = await model.complete(ask("say hello", seed=7, stop=("\n",)))
    assert response.text == "01:SAY Hello"
    assert response.model == "openai/gpt-4o-mini"
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0


async def test_a_provider_error_keeps_the_providers_message() -> None:
    litellm = import_litellm()  # through our import, which keeps litellm off the network

    failure = litellm.RateLimitError(
        message="slow down, 20 requests per minute", llm_provider="openai", model="gpt"
    )
    model = LiteLLMModel("openai/gpt-4o-mini", extra={"mock_response": failure})
    with anyio.fail_after(BOUND), pytest.raises(ModelProviderError) as caught:
        await model.complete(ask("x"))
    error = caught.value
    assert error.error_type == "RateLimitError"
    assert error.status_code == 429
    assert error.model == "openai/gpt-4o-mini"
    assert (
        str(error)
        == "model 'openai/gpt-4o-mini' failed: RateLimitError (HTTP 429): slow down, 20 requests per minute"
    )


async def test_a_provider_timeout_is_a_model_timeout() -> None:
    litellm = import_litellm()  # through our import, which keeps litellm off the network

    expired = litellm.Timeout(
        message="Request timed out after 30s", model="gpt-4o-mini", llm_provider="openai"
    )
    model = LiteLLMModel("openai/gpt-4o-mini", extra={"mock_response": expired})
    with anyio.fail_after(BOUND), pytest.raises(ModelTimeout) as caught:
        await model.complete(ask("x"))
    assert caught.value.seconds is None
    assert str(caught.value).startswith(
        "model 'openai/gpt-4o-mini' gave no answer in time (provider timeout: "
    )
    assert "Request timed out after 30s" in str(caught.value)


async def test_keys_are_read_from_the_environment_and_their_absence_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    model = LiteLLMModel("openai/gpt-4o-mini", extra={"max_retries": 0})
    with anyio.fail_after(BOUND), pytest.raises(ModelProviderError, match="OPENAI_API_KEY") as caught:
        await model.complete(ask("x"))
    assert "Traceback" not in str(caught.value)


async def test_unsupported_settings_are_dropped_unless_asked_not_to() -> None:
    # Anthropic has no seed; litellm refuses it unless told to drop it.
    dropping = LiteLLMModel("anthropic/claude-3-haiku-20240307", extra={"mock_response": "ok"})
    with anyio.fail_after(BOUND):
        assert (await dropping.complete(ask("x", seed=3))).text == "ok"
    strict = LiteLLMModel(
        "anthropic/claude-3-haiku-20240307", extra={"mock_response": "ok", "drop_params": False}
    )
    with anyio.fail_after(BOUND), pytest.raises(ModelProviderError, match=r"UnsupportedParamsError.*seed"):
        await strict.complete(ask("x", seed=3))


async def test_request_fields_reach_a_custom_provider() -> None:
    seen = await _seen(
        LiteLLMModel("paltest-echo/tiny"),
        max_tokens=64,
        temperature=0.3,
        stop=("\n\n", "END"),
        seed=11,
        grammar=GRAMMAR,
        metadata={"agent": "Host"},
    )
    assert seen["model"] == "tiny"
    assert seen["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "run step 01"},
    ]
    params = seen["optional_params"]
    assert (params["max_tokens"], params["temperature"], params["stop"], params["seed"]) == (
        64,
        0.3,
        ["\n\n", "END"],
        11,
    )
    assert seen["grammar"] == GRAMMAR
    assert "Host" not in json.dumps(seen)  # metadata never leaves the process


async def test_the_grammar_goes_only_where_it_is_accepted() -> None:
    assert (await _seen(LiteLLMModel("paltest-plain/tiny"), grammar=GRAMMAR))["grammar"] is None
    assert (await _seen(LiteLLMModel("paltest-plain/tiny", pass_grammar=True), grammar=GRAMMAR))[
        "grammar"
    ] == GRAMMAR
    assert (await _seen(LiteLLMModel("paltest-echo/tiny", pass_grammar=False), grammar=GRAMMAR))[
        "grammar"
    ] is None
    assert (await _seen(LiteLLMModel("paltest-echo/tiny")))["grammar"] is None  # no grammar asked
    # litellm's own providers get no grammar unless told (they would reject an unknown field)
    assert "extra_body" not in LiteLLMModel("openai/gpt-4o-mini").arguments(ask("x", grammar=GRAMMAR))


async def test_where_the_stable_part_ends_reaches_our_own_providers_only() -> None:
    stable = "## Agent Desk\n\n"
    request = ModelRequest(
        messages=(
            ChatMessage(role="system", content=SYSTEM),
            ChatMessage(role="user", content=stable + "## State\n$x = 1", stable_chars=len(stable)),
        )
    )
    assert request.stable_prefix == (1, len(stable))
    with anyio.fail_after(BOUND):
        seen = json.loads((await LiteLLMModel("paltest-echo/tiny").complete(request)).text)
    assert seen["stable_prefix"] == [1, len(stable)]
    assert seen["messages"][1]["content"] == stable + "## State\n$x = 1"  # the text itself is unchanged
    assert (await _seen(LiteLLMModel("paltest-echo/tiny")))["stable_prefix"] is None  # nothing marked
    # An HTTP API would refuse the field: litellm's own providers never get it.
    assert "extra_body" not in LiteLLMModel("openai/gpt-4o-mini").arguments(request)
    assert request.prompt_hash() == ask(stable + "## State\n$x = 1").prompt_hash()  # it never changes answers


async def test_a_grammar_joins_extra_body_given_in_extra() -> None:
    model = LiteLLMModel("paltest-echo/tiny", extra={"extra_body": {"cache_prompt": True}})
    seen = await _seen(model, grammar=GRAMMAR)
    assert seen["optional_params"]["extra_body"] == {"cache_prompt": True, "grammar": GRAMMAR}
    assert model.extra["extra_body"] == {"cache_prompt": True}  # the model's own settings are not changed


async def test_the_provider_factory_runs_once() -> None:
    models = [LiteLLMModel("paltest-echo/a"), LiteLLMModel("paltest-echo/b")]
    for model in models * 2:
        await _seen(model)
    assert factory_calls["echo"] == 1
    register_litellm_provider("paltest-echo", echo)  # same factory again: nothing happens
    await _seen(models[0])
    assert factory_calls["echo"] == 1


async def test_a_stuck_call_times_out_naming_model_and_seconds() -> None:
    model = LiteLLMModel("paltest-stuck/slow", timeout=0.05)
    await model.prepare()  # the import is not part of the call's time
    with anyio.fail_after(BOUND), pytest.raises(ModelTimeout) as caught:
        await model.complete(ask("x"))
    assert caught.value.model == "paltest-stuck/slow"
    assert caught.value.seconds == 0.05
    assert "'paltest-stuck/slow' gave no answer within 0.05 s" in str(caught.value)


async def test_a_failing_provider_gives_its_message_without_a_traceback() -> None:
    with anyio.fail_after(BOUND), pytest.raises(ModelProviderError) as caught:
        await LiteLLMModel("paltest-broken/m").complete(ask("x"))
    message = str(caught.value)
    assert "handler broke: the weights file is unreadable" in message
    assert "Traceback" not in message and "github.com" not in message


async def test_a_model_error_raised_by_a_provider_arrives_as_itself() -> None:
    with anyio.fail_after(BOUND), pytest.raises(ModelNotAvailable) as caught:
        await LiteLLMModel("paltest-unavailable/m").complete(ask("x"))
    assert str(caught.value) == "the local model needs llama-cpp-python: pip install 'pal-bridge[local]'"


async def test_an_answer_without_text_is_an_error() -> None:
    with anyio.fail_after(BOUND), pytest.raises(ModelError, match=r"'paltest-silent/m' returned no text"):
        await LiteLLMModel("paltest-silent/m").complete(ask("x"))


async def test_a_factory_that_builds_no_handler_is_reported_and_breaks_no_other_provider() -> None:
    with (
        anyio.fail_after(BOUND),
        pytest.raises(TypeError, match=r"returned a object; it must return a litellm\.CustomLLM"),
    ):
        await LiteLLMModel("paltest-bad-factory/m").complete(ask("x"))
    assert (await _seen(LiteLLMModel("paltest-echo/m")))["model"] == "m"


async def test_a_provider_may_not_shadow_one_of_litellms_own() -> None:
    with (
        anyio.fail_after(BOUND),
        pytest.raises(ModelError, match="'ollama' is one of litellm's own providers"),
    ):
        await LiteLLMModel("ollama/llama3").complete(ask("x"))


async def test_a_missing_litellm_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # what `import litellm` sees when it is not installed
    with pytest.raises(ModelNotAvailable, match=r"pip install 'pal-bridge\[llm\]'"):
        await LiteLLMModel("openai/gpt-4o-mini").complete(ask("x"))
    assert INSTALL_HINT == "pip install 'pal-bridge[llm]'"


def test_registering_checks_prefix_and_factory() -> None:
    with pytest.raises(ValueError, match="a plain name such as 'local'"):
        register_litellm_provider("local/", echo)
    with pytest.raises(ValueError, match="a plain name"):
        register_litellm_provider("", echo)
    with pytest.raises(TypeError, match="must be callable"):
        register_litellm_provider("paltest-x", "echo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'paltest-echo' is already registered"):
        register_litellm_provider("paltest-echo", stuck)
    assert "paltest-echo" in registered_litellm_providers()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"model": ""}, "a litellm model string such as 'openai/gpt-4o-mini' is needed"),
        ({"model": "openai/x", "timeout": 0}, "timeout of openai/x must be a positive finite number"),
        (
            {"model": "openai/x", "extra": {"messages": []}},
            "extra may not set 'messages': they come from the request",
        ),
        (
            {"model": "openai/x", "extra": {"timeout": 3}},
            r"extra may not set 'timeout': use LiteLLMModel\(timeout=...\)",
        ),
        ({"model": "openai/x", "extra": {"stream": True}}, "may not set 'stream'"),
    ],
)
def test_bad_settings_are_refused(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LiteLLMModel(**arguments)


def test_the_provider_is_the_part_before_the_slash() -> None:
    assert LiteLLMModel("openai/gpt-4o-mini").provider == "openai"
    assert LiteLLMModel("gpt-4o-mini").provider is None
    assert LiteLLMModel("gpt-4o-mini").name == "gpt-4o-mini"


async def test_prepare_refuses_a_model_string_litellm_has_no_provider_for() -> None:
    with anyio.fail_after(BOUND), pytest.raises(ModelNotAvailable) as caught:
        await LiteLLMModel("foo").prepare()
    message = str(caught.value)
    assert message.startswith("model 'foo': litellm knows no provider for it; write provider/model")
    assert "scripted:answers.jsonl" in message and "local/smollm2" in message


async def test_prepare_names_a_missing_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with anyio.fail_after(BOUND), pytest.raises(ModelNotAvailable) as caught:
        await LiteLLMModel("anthropic/claude-3-5-haiku-latest").prepare()
    assert str(caught.value) == (
        "model 'anthropic/claude-3-5-haiku-latest' needs the API key ANTHROPIC_API_KEY in the environment; "
        "set it (export NAME=...) or pass api_key"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    await LiteLLMModel("anthropic/claude-3-5-haiku-latest").prepare()
    await LiteLLMModel("openai/gpt-4o-mini", extra={"api_base": "http://127.0.0.1:9/v1"}).prepare()
    await LiteLLMModel("ollama_chat/llama3").prepare()  # OLLAMA_API_BASE is unset, and not a key
