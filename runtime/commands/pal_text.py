"""`pal validate | fmt | compile | json | graph`: the commands that work on program text alone."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from pal_core.errors import PalError, PalSyntaxError, Severity
from pal_core.ir import Program
from pal_core.sources import (
    SourceEncodingError,
    SourceForm,
    load_program,
    program_from_text,
    read_source,
    source_form,
)


def _add_validate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help=".pal, .pbasm, .pb or .md files, or .json (pal json output)"
    )
    parser.add_argument("--no-warnings", action="store_true", help="print errors only")
    parser.add_argument("--no-source", action="store_true", help="do not show the marked source line")


def _add_fmt(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help=".pal or .pbasm files, rewritten in place")
    parser.add_argument("--check", action="store_true", help="only report files that would change (exit 1)")
    parser.add_argument("--stdout", action="store_true", help="print the canonical text instead of rewriting")


def _add_compile(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="FILE.pb", help="Playbooks markdown")
    parser.add_argument("-o", "--output", metavar="FILE.pal", help="write here (default: standard output)")


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", nargs="?", metavar="FILE", help=".pal, .pbasm, .pb, .md or .json file")
    parser.add_argument("--schema", action="store_true", help="print the JSON Schema of the JSON form")
    parser.add_argument("--compact", action="store_true", help="one line")


def _add_graph(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="FILE", help=".pal, .pbasm, .pb, .md or .json file")
    parser.add_argument(
        "playbook",
        nargs="?",
        help="playbook name, or Agent.Playbook when two agents share it (default: the first playbook)",
    )


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "validate": _add_validate,
    "fmt": _add_fmt,
    "compile": _add_compile,
    "json": _add_json,
    "graph": _add_graph,
}


def _fail(message: str) -> int:
    print(message, file=sys.stderr)
    return 1


def run_validate(args: argparse.Namespace) -> int:
    """Print every diagnostic of every file; exit 1 when any file has an error."""
    from pal_core.validate import validate

    errors = warnings = 0
    for name in args.files:
        path = Path(name)
        try:
            form = source_form(path)
            text = read_source(path)
            # Markdown is validated here, not by the compiler, so warnings are reported too.
            program = program_from_text(text, file=name, form=form, check=False)
        except OSError as error:
            print(f"{name}: cannot read: {error.strerror}", file=sys.stderr)
            errors += 1
            continue
        except SourceEncodingError as error:
            print(str(error), file=sys.stderr)
            errors += 1
            continue
        except PalSyntaxError as error:
            diagnostics = list(error.errors)
        except PalError as error:  # an unknown suffix, a malformed JSON form
            print(str(error))
            errors += 1
            continue
        else:
            # Spans of compiled markdown point into the markdown, so its text marks the right lines.
            source = None if form is SourceForm.JSON else text
            diagnostics = validate(program, source_text=source)
        for diagnostic in diagnostics:
            if diagnostic.severity is Severity.WARNING:
                warnings += 1
                if args.no_warnings:
                    continue
            else:
                errors += 1
            print(diagnostic.format(show_source=not args.no_source))
    summary = f"{len(args.files)} file(s): {errors} error(s), {warnings} warning(s)"
    print(summary, file=sys.stderr)
    return 1 if errors else 0


def run_fmt(args: argparse.Namespace) -> int:
    """Rewrite files canonically; with --check, list the ones that would change."""
    from pal_core.parser import parse
    from pal_core.writer import write

    changed = failed = 0
    for name in args.files:
        path = Path(name)
        wrong = _wrong_form(path, "pal fmt", SourceForm.PAL)
        if wrong:
            print(wrong, file=sys.stderr)
            failed += 1
            continue
        try:
            text = read_source(path)
            canonical = write(parse(text, file=name))
        except OSError as error:
            print(f"{name}: cannot read: {error.strerror}", file=sys.stderr)
            failed += 1
            continue
        except PalError as error:
            print(str(error), file=sys.stderr)
            failed += 1
            continue
        if args.stdout:
            sys.stdout.write(canonical)
            continue
        if canonical == text:
            continue
        changed += 1
        if args.check:
            print(f"would reformat {name}")
        else:
            path.write_text(canonical, encoding="utf-8")
            print(f"reformatted {name}")
    if failed:
        return 1
    return 1 if (args.check and changed) else 0


def run_compile(args: argparse.Namespace) -> int:
    """Compile markdown to PAL text (validated: the output is PAL `pal validate` accepts); print the
    validator's warnings at their markdown lines."""
    from pal_core.compiler import compile_markdown
    from pal_core.validate import validate
    from pal_core.writer import write

    source = Path(args.source)
    wrong = _wrong_form(source, "pal compile", SourceForm.MARKDOWN)
    if wrong:
        return _fail(wrong)
    try:
        markdown = read_source(source)
        program = compile_markdown(markdown, file=str(source))
        text = write(program)
    except OSError as error:
        return _fail(f"{source}: cannot read: {error.strerror}")
    except PalError as error:
        return _fail(str(error))
    for warning in validate(program, source_text=markdown):
        print(warning.format(), file=sys.stderr)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as error:
            return _fail(f"{args.output}: cannot write: {error.strerror}")
    else:
        sys.stdout.write(text)
    return 0


def _wrong_form(path: Path, command: str, wanted: SourceForm) -> str | None:
    """Why `command` does not take this file, for a file of another form (by its suffix); None if it does."""
    try:
        form = source_form(path)
    except PalError:
        return None  # an unknown suffix: let the command try the text
    if form is wanted:
        return None
    if form is SourceForm.MARKDOWN:
        return (
            f"{path}: this is Playbooks markdown; {command} reads PAL text. Compile it first: "
            f"pal compile {path} -o {path.with_suffix('.pal')}"
        )
    if form is SourceForm.JSON:
        return (
            f"{path}: this is the JSON form of a program; {command} reads "
            f"{'Playbooks markdown (.pb, .md)' if wanted is SourceForm.MARKDOWN else 'PAL text'}"
        )
    return f"{path}: this is PAL already; {command} reads Playbooks markdown (.pb, .md)"


def run_json(args: argparse.Namespace) -> int:
    """Print the IR as JSON, or the schema."""
    from pal_core import jsonform

    indent = None if args.compact else 2
    if args.schema:
        print(json.dumps(jsonform.json_schema(), indent=indent))
        return 0
    if not args.source:
        return _fail("pal json: give a FILE, or --schema")
    program = _load(args.source)
    if program is None:
        return 1
    print(jsonform.dumps(program, indent=indent))
    return 0


def run_graph(args: argparse.Namespace) -> int:
    """Print a Mermaid flowchart of one playbook."""
    from pal_core.graph import mermaid

    program = _load(args.source)
    if program is None:
        return 1
    wanted = args.playbook
    agent_name, dot, playbook_name = wanted.rpartition(".") if wanted else ("", "", "")
    found = [
        (agent.name, playbook)
        for agent in program.agents
        if not dot or agent.name == agent_name
        for playbook in agent.playbooks
        if not wanted or playbook.name == playbook_name
    ]
    if wanted and len(found) > 1:
        choices = ", ".join(f"{agent}.{playbook.name}" for agent, playbook in found)
        return _fail(f"{args.source}: {wanted!r} names {len(found)} playbooks; name one of: {choices}")
    if found:
        sys.stdout.write(mermaid(found[0][1]))
        return 0
    available = ", ".join(f"{a.name}.{p.name}" for a in program.agents for p in a.playbooks) or "none"
    return _fail(f"{args.source}: no playbook {wanted!r}; available: {available}")


def _load(source: str) -> Program | None:
    try:
        return load_program(source)
    except OSError as error:
        print(f"{source}: cannot read: {error.strerror}", file=sys.stderr)
    except PalError as error:
        print(str(error), file=sys.stderr)
    return None


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": run_validate,
    "fmt": run_fmt,
    "compile": run_compile,
    "json": run_json,
    "graph": run_graph,
}
