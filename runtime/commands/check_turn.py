"""`pal check-turn answers.jsonl [--program prog.pal --at Playbook:Line]`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from pal_core.errors import PalError


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("answers", metavar="ANSWERS.jsonl", help='one model answer per line: {"text": ...}')
    parser.add_argument("--program", metavar="FILE", help="verify against this program")
    parser.add_argument("--at", metavar="PLAYBOOK:LINE", help="the line the answers continue from")


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"check-turn": _add}


def check_turn(args: argparse.Namespace) -> int:
    from runtime.answer_check import check_answers
    from runtime.loader import load

    if bool(args.program) != bool(args.at):
        print("error: --program and --at go together", file=sys.stderr)
        return 2
    texts: list[str] = []
    path = Path(args.answers)
    try:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                print(f"{path}:{number}: not JSON: {error.msg}", file=sys.stderr)
                return 2
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                print(f'{path}:{number}: expected {{"text": "..."}}', file=sys.stderr)
                return 2
            texts.append(record["text"])
        program = load(args.program) if args.program else None
        report = check_answers(texts, program, args.at)
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except PalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for answer in report.answers:
        status = (
            "ok" if answer.parsed and not answer.violations else ("violates" if answer.parsed else "FAILED")
        )
        print(f"answer {answer.index + 1}: {status}: {answer.summary}")
        for repaired in answer.repairs:
            print(f"    repaired: {repaired}")
        for violation in answer.violations:
            print(f"    {violation}")
    print(report.summary_line())
    return 1 if report.failed or report.violations else 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"check-turn": check_turn}
