"""The YAML subset of metadata blocks and front matter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pal_core import yamlish


def load(text: str) -> dict:
    return yamlish.load(list(enumerate(text.split("\n"), start=1)))


def test_forms_seen_in_the_corpus() -> None:
    text = """application: MultiAgentChat
date: '2023-06-15'
tags:
- playbooks
- python
version: 0.1.0
mcp:
  url: http://lawoffice.com/Paralegal
  timeout: 10
specialization:
  - accounting
required_attendees: [HeadChef, MarketingSpecialist]
meeting: true
empty:
note: a value # with a comment
quoted: "line\\nbreak"
"""
    assert load(text) == {
        "application": "MultiAgentChat",
        "date": "2023-06-15",
        "tags": ["playbooks", "python"],
        "version": "0.1.0",
        "mcp": {"url": "http://lawoffice.com/Paralegal", "timeout": 10},
        "specialization": ["accounting"],
        "required_attendees": ["HeadChef", "MarketingSpecialist"],
        "meeting": True,
        "empty": None,
        "note": "a value",
        "quoted": "line\nbreak",
    }


def test_block_scalars_and_mapping_items() -> None:
    assert load("text: |\n  one\n  two\nitems:\n  - name: a\n    n: 1\n  - b") == {
        "text": "one\ntwo\n",
        "items": [{"name": "a", "n": 1}, "b"],
    }


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("a: [1, 2", 1, 9),
        ("a: 'unterminated", 1, 4),
        ("a: 1\n   b: 2", 2, 4),
        ("just text", 1, 1),
        ("a: 1\na: 2", 2, 1),
        ('a: "bad \\q escape"', 1, 4),
    ],
)
def test_errors_say_where(text: str, line: int, column: int) -> None:
    with pytest.raises(yamlish.YamlError) as raised:
        load(text)
    assert (raised.value.line, raised.value.column) == (line, column)


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.text(min_size=1, max_size=10), values, max_size=5))
def test_dump_then_load_is_identity(data: dict) -> None:
    assert load("\n".join(yamlish.dump(data))) == data


def test_strings_that_other_yaml_readers_would_mistype_are_quoted() -> None:
    assert yamlish.dump({"a": "2023-06-15", "b": "yes", "c": "plain"}) == [
        'a: "2023-06-15"',
        'b: "yes"',
        "c: plain",
    ]
