"""`pal import <framework> module:attr -o out.pal [--strict]`: a program of another framework as PAL.

Registered with the `pal` CLI through the `pal_bridge.commands` entry point (the runtime never imports
this package).

The importer (importers.get_importer) is loaded only when the command runs, so building the CLI parser
loads no framework. The target is looked up as every command looks up bound modules
(runtime.module_path): the current directory first, as with `python -m`, so `myapp.graphs:graph` works from
the project's root; `pal run` finds it the same way, and also beside the program file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def _add_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "framework",
        metavar="FRAMEWORK",
        help="the framework the program is written for: langgraph, adk, autogen (AutoGen teams, ag2 group chats)",
    )
    parser.add_argument(
        "target",
        metavar="MODULE:ATTR",
        help="the object to import, such as myapp.graphs:graph (a StateGraph), myapp.agent:root_agent "
        "(an ADK agent, Workflow or App; for adk also a root_agent.yaml agent config) or myapp.teams:team "
        "(an AutoGen team or ag2 group chat)",
    )
    parser.add_argument("-o", "--output", metavar="FILE.pal", help="write here (default: standard output)")
    parser.add_argument(
        "--strict", action="store_true", help="fail, writing nothing, if any part cannot be expressed in PAL"
    )
    parser.add_argument(
        "--initiator",
        metavar="NAME",
        help="ag2 group chats: the member that says the task, as NAME.initiate_chat(manager, message=task) "
        "(default: a user outside the group)",
    )


HELP = {
    "import": "import a program of another framework as PAL: pal import langgraph|adk module:attr -o out.pal"
}
ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"import": _add_import}


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 1


def run_import(args: argparse.Namespace) -> int:
    """Import, report every diagnostic on standard error, write the program; exit 1 on failure."""
    from importers import ImportFailed, ImportTargetError, UnknownImporter, get_importer
    from pal_core.errors import PalError, Severity
    from pal_core.validate import validate
    from pal_core.writer import write

    try:
        importer = get_importer(args.framework)
    except UnknownImporter as error:
        return _fail(f"pal import: {error}")
    except ImportError as error:
        return _fail(f"pal import {args.framework}: the framework is not installed ({error})")
    options = {}
    if getattr(args, "initiator", None) is not None:
        import inspect

        if "initiator" not in inspect.signature(importer).parameters:
            return _fail(
                f"pal import {args.framework}: --initiator applies to ag2 group chats (pal import autogen)"
            )
        options["initiator"] = args.initiator
    try:
        result = importer(args.target, strict=args.strict, **options)
        text = write(result.program)
    except ImportFailed as error:
        return _fail(str(error))
    except ImportTargetError as error:
        return _fail(f"pal import {args.framework}: {error}")
    except PalError as error:
        return _fail(f"pal import {args.framework} {args.target}: {error}")
    for diagnostic in result.diagnostics:
        print(f"{args.target}: warning: {diagnostic.format()}", file=sys.stderr)
    errors = [item for item in validate(result.program) if item.severity is Severity.ERROR]
    if errors:
        # The importer's promise is a program that validates; say so loudly if it ever does not.
        for item in errors:
            print(f"{args.target}: {item.code} {item.message}", file=sys.stderr)
        return _fail(
            f"pal import {args.framework}: the imported program does not validate; please report this"
        )
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as error:
            return _fail(f"{args.output}: cannot write: {error.strerror}")
    else:
        sys.stdout.write(text)
    agents = len(result.program.agents)
    playbooks = sum(len(agent.playbooks) for agent in result.program.agents)
    where = args.output or "standard output"
    print(
        f"imported {args.target} to {where}: {agents} agent(s), {playbooks} playbook(s), "
        f"{len(result.diagnostics)} diagnostic(s)",
        file=sys.stderr,
    )
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"import": run_import}
