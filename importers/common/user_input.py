"""What an imported program's user answered, as text (shared by the support modules of the importers)."""

from __future__ import annotations

import json
from typing import Any


def message_text(message: Any) -> str:
    """The text of what the user answered: a reply read with `WaitForMessage` (a list of messages)
    counts as its last message's content."""
    if isinstance(message, list) and message:
        message = message[-1]
    content = getattr(message, "content", message)
    return content if isinstance(content, str) else json.dumps(content, default=str)


__all__ = ["message_text"]
