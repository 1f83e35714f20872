"""The model layer: one `Model` interface in front of litellm, the bundled local model, and the
deterministic ScriptedModel / ReplayModel; `resolve_model` turns a spec string into a Model; a run's
call budget and per-call timeout live in `CallLimiter`.

Importing this package never imports litellm; LiteLLMModel does that on its first call.
"""

from runtime.models.base import (
    ChatMessage,
    Model,
    ModelError,
    ModelNotAvailable,
    ModelRequest,
    ModelResponse,
    RequestKind,
    Usage,
)
from runtime.models.limits import (
    CallLimiter,
    CallLimits,
    LimitedModel,
    ModelCallLimitExceeded,
    ModelTimeout,
    complete_within,
)
from runtime.models.litellm_model import (
    LiteLLMModel,
    ModelProviderError,
    register_litellm_provider,
    request_grammar,
    request_stable_prefix,
)
from runtime.models.registry import (
    ModelSpecError,
    register_model_prefix,
    registered_model_prefixes,
    resolve_model,
    unregister_model_prefix,
)
from runtime.models.replay import CassetteError, CassetteRecord, ReplayModel, read_cassette
from runtime.models.scripted import ScriptedAnswer, ScriptedModel

__all__ = [
    "CallLimiter",
    "CallLimits",
    "CassetteError",
    "CassetteRecord",
    "ChatMessage",
    "LimitedModel",
    "LiteLLMModel",
    "Model",
    "ModelCallLimitExceeded",
    "ModelError",
    "ModelNotAvailable",
    "ModelProviderError",
    "ModelRequest",
    "ModelResponse",
    "ModelSpecError",
    "ModelTimeout",
    "ReplayModel",
    "RequestKind",
    "ScriptedAnswer",
    "ScriptedModel",
    "Usage",
    "complete_within",
    "read_cassette",
    "register_litellm_provider",
    "register_model_prefix",
    "registered_model_prefixes",
    "request_grammar",
    "request_stable_prefix",
    "resolve_model",
    "unregister_model_prefix",
]
