"""Request builders shared by the model tests."""

from __future__ import annotations

from typing import Any

from runtime.models import ChatMessage, ModelRequest

SYSTEM = "You execute PAL programs. Answer in the PAL output format."


def ask(text: str, **settings: Any) -> ModelRequest:
    """A two-message request (a fixed system prompt, then `text` from the user)."""
    messages = (ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=text))
    return ModelRequest(messages=messages, **settings)
