"""Playbooks markdown (`.pb`) -> the PAL IR, deterministically and without a model.

`compile_markdown(text)` returns a `Program`; `pal_core.writer.write` turns it into PAL text, which
`pal_core.parser.parse` reads back to the same IR. Markdown that cannot be compiled raises
PalSyntaxError listing every problem with its `file:line:col` and the marked source line.

Step, trigger, note, playbook and agent spans point into the markdown, and `Program.source` is the
markdown file, so later diagnostics about a compiled program name the line its author wrote. The
compiled program is validated before it is returned: a validator error is a compile error at the
markdown line (the compiler never writes PAL that `pal validate` rejects). Error
codes are the parser's (PAL001-PAL012) for the same kinds of problem, and PAL020 for a jump whose
target cannot be found.

Reading the markdown
--------------------
- A `#!` first line (`#!/usr/bin/env pb`) is skipped; optional `---` front matter (YAML) at the top (after
  it) -> `Program.frontmatter`. A `---` / `***` / `___` line right before a header (or at the end) separates
  agents or playbooks and is skipped.
- `# Title` starts an agent, `## Title` a playbook, `### Triggers` / `### Steps` / `### Notes` (singular
  accepted, any case) a playbook section; `## Steps` inside a playbook is read as `### Steps` (warning
  PAL021). Other `###` titles, sections outside a playbook, text before
  the first agent and playbooks before the first agent are errors.
- Right under an agent or playbook header: a `metadata:` block (closed by `---`, or by the end of its
  indented lines), or bare lines whose key is a known metadata key (`public`, `meeting`,
  `required_attendees`, `optional_attendees`, `startup_mode`, `execution_mode`, `python`, `remote`) as
  older `.pb` files write them. Metadata passes through unchanged.
- Other text under a header is its description, kept line for line (other fenced blocks, `####`
  headings and `<!-- -->` comments included). ```python and ```public.json blocks belong to the agent
  wherever they stand, and pass through; `<!-- -->` comments just before a header stay with it.
  Comments between list items are the author's notes and are dropped.
- Section contents are markdown lists (`-`, `*`, `+`, `1.`, `1)`); nesting follows indentation;
  indented or directly following lines continue an item. Text that is not a list item is an error, but
  in `### Triggers`, where a plain line is one trigger (warning PAL022).

Names
-----
- Agent and playbook names are CamelCase: `Customer Support` -> `CustomerSupport`, `Greet the user` ->
  `GreetTheUser`, `Order Support Agent` -> `OrderSupportAgent`. A title that is already one identifier
  (`GetOrderStatus`, `process_order`, `X`) is kept as written. Apostrophes are dropped; a name must start
  with a letter.
- Parameters come from `## Name($a, $b:int=2)` and from `$variables` written in the title:
  `## Get fact about $country` -> `GetFact($country)` (connector words ending the title are dropped).
- The return type is the one after `->` in the header; otherwise it is inferred from the steps that
  return: `None` when none returns a value, else the type of the returned values when they all agree
  (`$x:int` or a parameter's type, a literal's type, `str` for a value described in words), else `Any`.
- A missing agent description becomes `<Title> agent with the playbooks A and B.`; a missing playbook
  description becomes its title as a sentence (`Greet the user.`).

Triggers and notes
------------------
- Triggers are numbered `T1`, `T2`... and notes `N1`, `N2`... in reading order (nested items too).
- Trigger code: an explicit `BGN`/`CND`/`EVT` prefix is kept; text about the start of the program
  (`At the beginning`, `When program starts`, `On startup`) is BGN; text about an event, webhook,
  notification or signal, or about a message/email/request being received or arriving, is EVT;
  everything else is a condition, CND. `@playbook(triggers=[...])` strings in Python blocks get the same
  treatment, rewritten in place as `"T1:CND ..."` (`pal_core.triggers.canonical_python`; a lone string `triggers="..."`
  becomes a list of one, warning PAL023).

Steps
-----
Top-level steps are numbered `01`, `02`...; nested ones `01.01`, `01.01.01`. Each item becomes, in this
order of precedence (step text is kept as written unless said otherwise):
1. A condition - `If`, `Else if`, `Otherwise if`, `Elif`, `While`, `Until`, `For each/every/all`,
   `For $x ...`, `When`, `Otherwise`, `Else` -> CND, with nested items as its body. An action on the
   same line (`If X, do Y`, `If X then Y`, `If X: Y`, `Otherwise, Y`) becomes the first step of the
   body; when the action ends with `:` the nested items go under it instead. `While`/`Until`/`For`
   bodies end with `JMP <loop line>` unless they already end in JMP, RET or `YLD exit`.
2. `End program`, `Exit`, `End the conversation`... -> `YLD exit`.
3. `Wait for the user ...` -> `YLD user`.
4. A jump alone - `Go back`, `Try again`, `Retry`, `Repeat`, `Start over`, `Go back to step 2`,
   `Go back to <start of a step's text>`, `Go back to the previous step`, `Return to step 2` -> JMP.
   Without a target it goes to the enclosing condition or loop (to the `If` that heads an if/else
   chain) and reads `JMP 03 to check again`; `step N.M` counts markdown items from 1 at each level;
   `the previous step` is the item before (leaving a condition's body if need be); a step named by
   the start of its text is the nearest one before the jump, else the first after; when no step
   starts so, the step whose words match best (warning PAL024; a limit such as `up to 2 times` stays
   in the JMP's text); a target that cannot be found is an error listing the steps it could mean. `<action> and go back to ...` is the action's step followed by the JMP;
   `<action> and end the conversation` is the action's step followed by `YLD exit`.
5. `Return ...` -> RET with the rest of the text (not `Return to step ...`).
6. A Python call `Foo(...)`, `$x = Foo(...)`, `$x:type = Agent.Foo(...)` -> QUE, followed by `YLD call`
   when the result is assigned or the callee is a playbook of the program not known to return None.
   `Say(...)` that asks something is followed by `YLD user` instead. Calls of Python built-ins
   (`$n = len($items)`) and other assignments (`$x = $x * 2`) -> EXE.
7. `Set $x to V` / `Let $x be V` -> EXE, written `$x = V` when V is a literal or an expression of
   `$variables`.
8. First verb (after fillers such as `then`, `also` and adverbs such as `openly`) think, reflect,
   reason, ponder, deliberate, consider, brainstorm -> TNK.
9. A step naming a playbook of its agent -> QUE, followed by `YLD call` unless that playbook is known
   to return None. Named means: the first playbook name written in the sentence as a whole word
   (`Agent.Playbook` included; one-word names such as `Main` are too common to count), else the
   longest playbook title whose words start the sentence (two words or more, or the whole sentence:
   `Summarize order for $order` names `## Summarize order for $order`). A playbook never names itself.
10. Communication verbs (say, tell, ask, greet, inform, welcome, thank, apologize, explain, announce,
    present, show, display, share, remind, propose, suggest, recommend, describe, offer, give, ...), or
    a step that is itself a question (ends with `?`) -> QUE; when the step asks something (ask, prompt,
    nudge, a trailing `?`, or `try again`) it is followed by `YLD user` (`YLD meeting` in a meeting
    playbook, unless the step names the user).
11. Retrieval and invocation verbs (look up, get, fetch, retrieve, load, search, query, call, invoke,
    run, send, submit, download, upload, publish) -> QUE, followed by `YLD call` when the step names
    another agent of the program, by name or by the words of its title (its answer comes back from
    that agent).
12. Anything else -> EXE.
A QUE step that says `try again` inside a condition or loop is followed (after its yield) by
`JMP <condition> to check again`. A playbook whose last top-level step is not RET or `YLD exit` gets a
closing `RET`. `CHK` steps are never generated: where a note applies is a judgement, not a rule.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pal_core.compiler.build import build_program
from pal_core.compiler.markdown import read_markdown
from pal_core.errors import Diagnostic, PalSyntaxError, Severity, SourceReporter
from pal_core.gc_pause import paused_cyclic_gc
from pal_core.ir import Program

__all__ = ["compile_file", "compile_markdown"]


def compile_markdown(text: str, *, file: str | None = None, check: bool = True) -> Program:
    """Compile Playbooks markdown to the PAL IR; raise PalSyntaxError listing every problem. A leading byte
    order mark is ignored.

    With `check` (the default) the compiled program is also validated: markdown whose PAL the validator
    rejects (an `Otherwise` after an action, a call of a playbook that does not exist) fails here, each
    error at its markdown line with the line marked, rather than compiling to a program that cannot run.
    `pal validate` passes `check=False` and validates itself, to report warnings too.
    """
    text = text.removeprefix("\ufeff")
    with paused_cyclic_gc():
        reporter = SourceReporter(text, file)
        document = read_markdown(text, reporter)
        program = build_program(document, reporter, file)
        reporter.raise_if_any()
    if reporter.warnings:
        program = dataclasses.replace(program, warnings=reporter.sorted_warnings())
    if check:
        from pal_core.validate import validate

        errors = [item for item in validate(program, source_text=text) if item.severity is Severity.ERROR]
        if errors:
            raise PalSyntaxError([_placed(item, text) for item in errors])
    return program


def _placed(diagnostic: Diagnostic, text: str) -> Diagnostic:
    """A finding about the whole file (no agent at all) is reported at line 1 of the markdown."""
    if diagnostic.line:
        return diagnostic
    first = text.splitlines()[0] if text.strip() else ""
    return dataclasses.replace(diagnostic, line=1, column=1, source_line=first)


def compile_file(path: str | Path) -> Program:
    """Compile a `.pb` file (UTF-8; SourceEncodingError otherwise)."""
    from pal_core.sources import read_source

    return compile_markdown(read_source(path), file=str(path))
