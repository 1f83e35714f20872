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
