"""The pure-Python GBNF recognizer on its own: syntax, matching, errors, and agreement with `re`."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.local.gbnf_check import GbnfError, parse_gbnf


def accepts(grammar: str, text: str) -> bool:
    return parse_gbnf(grammar).accepts(text)


@pytest.mark.parametrize(
    ("grammar", "accepted", "rejected"),
    [
        ('root ::= "ab"', ["ab"], ["", "a", "abc", "ba"]),
        ('root ::= "a" | "bc" | ""', ["a", "bc", ""], ["b", "abc"]),
        ("root ::= [a-c]", ["a", "b", "c"], ["d", "", "ab"]),
        ("root ::= [^a-c]", ["d", "\n", "é"], ["a", "c", ""]),
        ('root ::= [a-] "x"', ["ax", "-x"], ["bx"]),
        (r"root ::= [\x41-\x43\n]", ["A", "C", "\n"], ["D"]),
        (r'root ::= "\"\\\t" [\[\]]', ['"\\\t[', '"\\\t]'], ['"\\\t']),
        (r'root ::= "\u00e9\U0001F600"', ["é😀"], ["e"]),
        ("root ::= .", ["a", "\n", "😀"], ["", "ab"]),
        ('root ::= "a"*', ["", "a", "aaaa"], ["b"]),
        ('root ::= "a"+', ["a", "aaa"], [""]),
        ('root ::= "a"? "b"', ["b", "ab"], ["aab"]),
        ('root ::= "a"{3}', ["aaa"], ["aa", "aaaa"]),
        ('root ::= "a"{2,}', ["aa", "aaaaa"], ["a"]),
        ('root ::= "a"{1,3} "b"', ["ab", "aaab"], ["b", "aaaab"]),
        ('root ::= "a"{0,2}', ["", "aa"], ["aaa"]),
        ('root ::= ( "ab" | "c" )+ "d"', ["abd", "cabcd"], ["d", "abcab"]),
        ('root ::= x x\nx ::= "a" | "b"', ["ab", "ba", "aa"], ["a", "abc"]),
        # Recursion that is not left recursion.
        ('root ::= "(" root ")" | ""', ["", "()", "(())"], ["(", "())"]),
        # Comments and newlines inside parentheses and after `|`.
        ('# top\nroot ::= ( "a" # one\n  | "b" ) |\n  "c" # end', ["a", "b", "c"], ["d"]),
        # Nullable repetition does not loop.
        ('root ::= ( "a"? )* "b"', ["b", "aab"], ["aa"]),
    ],
)
def test_accepts_exactly_the_sentences(grammar: str, accepted: list[str], rejected: list[str]) -> None:
    for text in accepted:
        assert accepts(grammar, text), text
    for text in rejected:
        assert not accepts(grammar, text), text


def test_prefixes_are_the_texts_a_sampler_could_still_complete() -> None:
    grammar = parse_gbnf('root ::= "yld " ( "user" | "call" ) [0-9]{0,2}')
    for text in ["", "y", "yld ", "yld u", "yld user", "yld call1"]:
        assert grammar.accepts_prefix(text), text
    for text in ["x", "yld x", "yld user123", "yldcall"]:
        assert not grammar.accepts_prefix(text), text


@pytest.mark.parametrize(
    ("grammar", "message"),
    [
        ('rot ::= "a"', "no `root` rule"),
        ("root ::= missing", "undefined rule `missing`"),
        ('root ::= root "a"', "left recursion"),
        ('root ::= a\na ::= b "x"\nb ::= "y"? a', "left recursion"),
        (r'root ::= "\q"', "unknown escape"),
        ('root ::= "abc', "never closes"),
        ("root ::= [abc", "never closes"),
        ('root ::= ( "a"', "expected `)`"),
        ('root ::= "a"{3,1}', "maximum below its minimum"),
        ('root ::= "a"{x}', "expected a number"),
        ('root ::= * "a"', "must follow an element"),
        ('root ::= "a"\nroot ::= "b"', "defined twice"),
        ('root "a"', "expected `::=`"),
        ('root ::= "a" )', "expected a newline"),
        # Outside parentheses a newline ends the rule; a `|` must come before it, not after.
        ('root ::= "a"\n  | "b"', "expected a rule name"),
    ],
)
def test_refuses_what_llama_cpp_refuses(grammar: str, message: str) -> None:
    with pytest.raises(GbnfError, match=re.escape(message)):
        parse_gbnf(grammar)


def test_errors_say_where() -> None:
    with pytest.raises(GbnfError, match=r"GBNF 2:12: unknown escape"):
        parse_gbnf('root ::= a\na ::= "x" "\\q"')


# Differential test: random regular structures written both as GBNF and as a Python regex.

_ALPHABET = "ab-\n"


def _literal(text: str) -> tuple[str, str]:
    gbnf = '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return gbnf, re.escape(text)


_atoms = st.one_of(
    st.text(alphabet=_ALPHABET, min_size=1, max_size=3).map(_literal),
    st.sampled_from(
        [
            ("[a-b]", "[a-b]"),
            ("[^a]", "[^a]"),
            (r"[\n-]", r"[\n\-]"),
            ('""', ""),
        ]
    ),
)


def _combine(children: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
    sequence = st.lists(children, min_size=1, max_size=3).map(
        lambda items: (" ".join(g for g, _ in items), "".join(f"(?:{r})" for _, r in items))
    )
    choice = st.lists(children, min_size=2, max_size=3).map(
        lambda items: (
            "( " + " | ".join(g for g, _ in items) + " )",
            "(?:" + "|".join(r for _, r in items) + ")",
        )
    )
    repeat = st.tuples(children, st.sampled_from(["*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}"])).map(
        lambda pair: (f"( {pair[0][0]} ){pair[1]}", f"(?:{pair[0][1]}){pair[1]}")
    )
    return st.one_of(sequence, choice, repeat)


_structures = st.recursive(_atoms, _combine, max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(structure=_structures, texts=st.lists(st.text(alphabet=_ALPHABET, max_size=7), min_size=1, max_size=8))
def test_agrees_with_python_regular_expressions(structure: tuple[str, str], texts: list[str]) -> None:
    gbnf, pattern = structure
    grammar = parse_gbnf(f"root ::= {gbnf}")
    compiled = re.compile(pattern, re.DOTALL)
    for text in texts:
        assert grammar.accepts(text) == (compiled.fullmatch(text) is not None), (gbnf, text)
        prefix_possible = any(
            compiled.fullmatch(text + tail) is not None
            for tail in ["", "a", "b", "-", "\n", "ab", "ba", "aa", "bb"]
        )
        if prefix_possible:
            assert grammar.accepts_prefix(text), (gbnf, text)
