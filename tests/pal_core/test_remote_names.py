"""PAL names for remote tools and their arguments (pal_core.remote_names)."""

from __future__ import annotations

import pytest

from pal_core.remote_names import is_pal_name, pal_name, pal_names


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("echo", "echo"),
        ("get_current_time", "get_current_time"),
        ("get-sum", "get_sum"),
        ("get-structured-content", "get_structured_content"),
        ("files.read", "files_read"),
        ("3d-render", "tool_3d_render"),
        ("import", "import_"),
        ("héllo", "h_llo"),
        ("", "_"),
    ],
)
def test_each_name_becomes_an_identifier(name: str, expected: str) -> None:
    assert pal_name(name) == expected
    assert is_pal_name(pal_name(name))


def test_names_already_legal_keep_theirs_and_clashes_are_numbered() -> None:
    assert pal_names(["get-sum", "get_sum", "get.sum", "echo"]) == {
        "get_sum_2": "get-sum",
        "get_sum": "get_sum",
        "get_sum_3": "get.sum",
        "echo": "echo",
    }
