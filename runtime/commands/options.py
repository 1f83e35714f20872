"""Option types shared by the `pal` subcommands (and the plugins'), so every count and duration is
checked the same way and a bad value is reported by argparse naming the flag:
`pal run: error: argument --max-model-calls: must be a whole number >= 0, got '-1'`."""

from __future__ import annotations

import argparse
import math


def count(text: str) -> int:
    """A whole number >= 0 (`--max-model-calls`, `--retries`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A positive, finite number of seconds (`--timeout`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def port(text: str) -> int:
    """A TCP port, 0-65535 (0: any free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number 0-65535, got {text!r}")
    return value


def thread_id(text: str) -> str:
    """A thread id as the stores take it (1 to 200 characters, no spaces or control characters)."""
    from runtime.store import StoreError
    from runtime.store.format import check_thread_id

    try:
        return check_thread_id(text)
    except StoreError as error:
        raise argparse.ArgumentTypeError(str(error).replace("thread id ", "", 1)) from None


def duration(text: str) -> float:
    """An age or a length of time: seconds, or a number with a unit, `90s`, `15m`, `12h`, `30d`, `2w`."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    number, unit = (text[:-1], text[-1]) if text[-1:].lower() in units else (text, "s")
    try:
        value = float(number) * units[unit.lower()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a length of time such as 30d, 12h, 15m or 90s, got {text!r}"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(
            f"must be a length of time such as 30d, 12h, 15m or 90s, got {text!r}"
        )
    return value
