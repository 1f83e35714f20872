"""Random sentences of a GBNF grammar (read by gbnf_check), for checking what a grammar admits."""

from __future__ import annotations

import random

from runtime.local.gbnf_check import Alternatives, CharClass, Element, Grammar, Literal, Repeat, RuleRef

# Characters a model could write, the awkward ones included: quotes, backslash, backtick, brackets.
POOL = "abcxyzABCXYZ0189 .,;:!?-_'\"\\`[](){}$=#*/+<>|@%&^~\n\té–—😀"


def sample(grammar: Grammar, rng: random.Random, extra_repeats: int = 3) -> str:
    """One sentence: a random option at each choice, repetitions between their minimum and a few more."""
    out: list[str] = []

    def emit(element: Element) -> None:
        if isinstance(element, Literal):
            out.append(element.text)
        elif isinstance(element, CharClass):
            allowed = [char for char in POOL if element.matches(char)]
            if not allowed:
                raise ValueError(f"no character of the pool fits {element}")
            out.append(rng.choice(allowed))
        elif isinstance(element, RuleRef):
            emit(grammar.rules[element.name])
        elif isinstance(element, Repeat):
            top = element.minimum + extra_repeats
            if element.maximum is not None:
                top = min(top, element.maximum)
            for _ in range(rng.randint(element.minimum, top)):
                emit(element.element)
        elif isinstance(element, Alternatives):
            for item in rng.choice(element.options):
                emit(item)

    emit(RuleRef(name=grammar.root))
    return "".join(out)
