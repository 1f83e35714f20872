"""The server's log: `pal mcp serve --log-level LEVEL --log-format text|json`, on standard error.

Three loggers say what an operator needs: `mcp_bridge.calls` one line per tool call (INFO when it
answered, WARNING when it failed, so failures show at the default level), `mcp_bridge.access` one line per
HTTP request (INFO), and the rest of pal-bridge its warnings. With `--log-format json` each line is one JSON
object with `time`, `level`, `logger`, `message` and the line's fields (`tool`, `thread_id`, `outcome`,
`duration_ms`; `method`, `path`, `status`, `client` for HTTP), ready for a log shipper.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

LEVELS = ("debug", "info", "warning", "error")
"""The accepted `--log-level` values."""
FORMATS = ("text", "json")
"""The accepted `--log-format` values."""
FIELDS = ("tool", "thread_id", "outcome", "duration_ms", "error", "method", "path", "status", "client")
"""The structured fields a log line may carry (`logger.info(..., extra={...})`)."""
TEXT_FORMAT = "pal mcp: %(levelname)s: %(message)s"


class JsonLines(logging.Formatter):
    """One JSON object per record: time (UTC, ISO 8601), level, logger, message and the FIELDS it has."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(level: str = "warning", form: str = "text", *, stream: TextIO | None = None) -> None:
    """Send the log to `stream` (standard error) at `level`, as text or JSON lines; replaces what an
    earlier call set up."""
    if level not in LEVELS:
        raise ValueError(f"log level {level!r}: use one of {', '.join(LEVELS)}")
    if form not in FORMATS:
        raise ValueError(f"log format {form!r}: use one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines() if form == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
