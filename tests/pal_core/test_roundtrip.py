"""Round trips: corpus and identity fixtures through parse, write and the JSON form."""

from __future__ import annotations

import json

import jsonschema
import pytest

from pal_core import jsonform
from pal_core.parser import parse, parse_file
from pal_core.writer import write
from tests.conftest import CORPUS, FIXTURES

CORPUS_FILES = sorted(CORPUS.glob("*.pbasm"))
IDENTITY_BLOCKS = (FIXTURES / "pal" / "identity.pal").read_text(encoding="utf-8").split("\n=====\n")[1:]


def test_the_whole_corpus_is_here() -> None:
    assert len(CORPUS_FILES) == 19


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_parse_write_parse_gives_the_same_ir(path) -> None:
    program = parse_file(path)
    text = write(program)
    again = parse(text)
    assert again == program
    assert write(again) == text  # a fixed point after one pass


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_corpus_json_round_trip(path) -> None:
    program = parse_file(path)
    data = jsonform.to_json(program)
    jsonschema.validate(data, jsonform.json_schema())
    assert jsonform.loads(json.dumps(data)) == program


@pytest.mark.parametrize("block", IDENTITY_BLOCKS, ids=lambda b: b.split("\n", 1)[0][:40])
def test_identity_fixtures_are_canonical(block: str) -> None:
    text = block if block.endswith("\n") else block + "\n"
    program = parse(text)
    assert write(program) == text
    assert jsonform.loads(jsonform.dumps(program)) == program


def test_published_schema_matches_the_code() -> None:
    published = json.loads(
        (FIXTURES.parent.parent / "pal_core" / "program.schema.json").read_text(encoding="utf-8")
    )
    assert published == jsonform.json_schema(), (
        "regenerate with: pal json --schema > pal_core/program.schema.json"
    )
