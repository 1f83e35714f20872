"""The `pal` command line. Subcommands are wired here; their work lives in runtime.commands.*, imported
only when that subcommand runs, so `pal --help` stays fast and never loads a framework."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

# (name, module in runtime.commands, help); each module has `add_arguments(parser)` and `run(args) -> int`.
_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("validate", "pal_text", "check PAL files; prints file:line:col: CODE message"),
    ("fmt", "pal_text", "rewrite PAL files in canonical layout (--check: report only)"),
    ("compile", "pal_text", "compile Playbooks markdown (.pb) to PAL"),
    ("json", "pal_text", "print a program's IR as JSON (or the JSON Schema)"),
    ("graph", "pal_text", "print a Mermaid flowchart of a playbook"),
    ("run", "run", "run a program (a model executes the steps the runtime cannot)"),
    ("resume", "threads", "continue a thread (a run that stopped, crashed or waits for the user)"),
    ("threads", "threads", "list the threads (durable runs) of a store, with their status"),
    ("history", "threads", "show a thread's verified turns (--all: every entry of its log)"),
    ("fork", "threads", "start a new thread from entry N of another (the original is not touched)"),
    ("check-turn", "check_turn", "parse (and verify) recorded model answers, one JSON object per line"),
    ("studio", "studio", "serve a local web page over the threads of a store (needs pal-bridge[studio])"),
)
# Packages above the runtime (importers, mcp_bridge) add subcommands through this entry-point group; each
# entry names a module with HELP, ARGUMENTS and HANDLERS dicts keyed by subcommand name.
PLUGIN_GROUP = "pal_bridge.commands"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="pal",
        description="PAL (Playbooks Assembly Language) tools and verifying runtime.",
    )
    parser.add_argument(
        "--version", action="version", version=f"pal {_version()}", help="print the version and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module, help_text in _COMMANDS:
        _add_command(sub, name, f"runtime.commands.{module}", help_text)
    for module_path in _plugin_modules():
        try:
            module = importlib.import_module(module_path)
        except ImportError as error:
            # A broken or half-installed plugin must not take the other commands down with it.
            print(f"pal: commands from {module_path} are unavailable: {error}", file=sys.stderr)
            continue
        for name, help_text in module.HELP.items():
            _add_command(sub, name, module_path, help_text)
    return parser


def _add_command(sub: argparse._SubParsersAction, name: str, module_path: str, help_text: str) -> None:
    command = sub.add_parser(name, help=help_text, description=help_text)
    command.set_defaults(_module=module_path, _name=name)
    # Argument definitions live beside each command; importing them is cheap (no framework imports).
    importlib.import_module(module_path).ARGUMENTS[name](command)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{version('pal-bridge')} (pal-bridge, Python {sys.version.split()[0]})"
    except PackageNotFoundError:  # run from a checkout that is not installed
        return f"(pal-bridge from {__file__.rsplit('/', 2)[0]}, not installed)"


def _plugin_modules() -> list[str]:
    from importlib.metadata import entry_points

    return sorted({entry.value for entry in entry_points(group=PLUGIN_GROUP)})


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `pal` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    module = importlib.import_module(args._module)
    handler: Callable[[argparse.Namespace], int] = module.HANDLERS[args._name]
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
