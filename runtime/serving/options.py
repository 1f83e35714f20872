"""The options every `pal ... serve` command shares (`pal mcp serve`, `pal a2a serve`), so both read them
the same way: the HTTP address and token, the operator's log, the model and the budgets of each call, the
store and its lease. Argparse only: importing this loads nothing else."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from runtime.commands.budgets import add_budget_arguments, budget_limits
from runtime.commands.options import count, port, seconds

if TYPE_CHECKING:
    from pal_core.ir import Program
    from runtime.models.base import Model
    from runtime.program_run import RunLimits


def add_http_arguments(
    parser: argparse.ArgumentParser, *, token_env: str, default_port: int, only: str = ""
) -> None:
    """`--host`, `--port`, `--token`, `--allow-unauthenticated`; `only` heads their help (`HTTP only: `)."""
    parser.add_argument("--host", default="127.0.0.1", help=f"{only}address to bind (default: 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=port,
        default=default_port,
        help=f"{only}port; 0 picks a free one (default: {default_port})",
    )
    parser.add_argument(
        "--token", help=f"{only}require `Authorization: Bearer TOKEN` (default: ${token_env} when set)"
    )
    parser.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help=f"{only}serve an address other machines can reach without a token (refused otherwise)",
    )


def add_log_arguments(parser: argparse.ArgumentParser, *, per: str) -> None:
    """`--log-level`, `--log-format` (runtime.serving.logs); `per` names what gets a line at `info`."""
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="warning",
        help=f"what the log on standard error shows: `info` adds a line per {per} and per HTTP request; "
        "failures show at `warning` (default: warning)",
    )
    parser.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="text, or one JSON object per line"
    )


def add_run_arguments(parser: argparse.ArgumentParser, *, scope: str) -> None:
    """`--model`, `--max-model-calls`, `--timeout` and the budgets, each for `scope` (`each tool call`)."""
    parser.add_argument(
        "--model",
        "-m",
        help="model for steps the runtime cannot run itself (litellm string, scripted:FILE, replay:FILE, ...); "
        "default: $PAL_MODEL, else none (fast-path and Python playbooks only)",
    )
    parser.add_argument(
        "--max-model-calls",
        type=count,
        default=200,
        metavar="N",
        help=f"model calls {scope} may make (default: 200)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="wall-clock limit per model call (default: none; an answer's budget is in tokens)",
    )
    add_budget_arguments(parser, scope=scope)


def add_lease_arguments(parser: argparse.ArgumentParser, *, needs_store: str = "with --store: ") -> None:
    """`--lease` and `--create-store`."""
    parser.add_argument(
        "--lease",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help=f"{needs_store}seconds a thread stays blocked after the server running its call died, before "
        "another server takes it over (default: 15; renewed every third of it while a call runs)",
    )
    parser.add_argument(
        "--create-store",
        action="store_true",
        help="make the --store if it does not exist yet (without it, a store that does not exist is an error)",
    )


def serving_token(given: str | None, token_env: str) -> str | None:
    """The bearer token: `--token`, else the environment variable, else None."""
    return given if given is not None else os.environ.get(token_env) or None


def serving_model(spec: str | None) -> Model | None:
    """The model of `--model`, else `$PAL_MODEL`, else None (fast-path and Python playbooks still serve; a
    step that needs a model is a call error)."""
    from runtime.models.registry import MODEL_ENV, resolve_model

    if spec is None and not os.environ.get(MODEL_ENV, "").strip():
        return None
    return resolve_model(spec)


def served_program(path: str, model: str | None, *, command: str) -> tuple[Program, Model | None]:
    """The program a serving command serves, validated, its warnings printed on stderr as `pal <command>:`
    lines, and its model (`serving_model`). PalError, OSError or ValueError when either cannot be had."""
    from runtime.loader import load_valid

    program, warnings = load_valid(path)
    for warning in warnings:
        print(f"pal {command}: {warning.format(show_source=False)}", file=sys.stderr)
    return program, serving_model(model)


def serving_limits(args: argparse.Namespace) -> RunLimits:
    """The budgets of each call, from the options of `add_run_arguments`."""
    from runtime.program_run import RunLimits

    return RunLimits(max_model_calls=args.max_model_calls, model_timeout=args.timeout, **budget_limits(args))


def positive(text: str) -> int:
    """A whole number >= 1."""
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value
