"""Where bound Python modules are found (runtime.module_path): beside the program file, then in the current
directory, then on Python's path; the same for `pal run`, `pal mcp serve`, the Python API and `pal import`.

Every case runs in its own process with its own working directory, as a user runs `pal`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.module_path import module_folders
from tests.pal_command import no_model, pal_environment, run_pal

pytestmark = pytest.mark.slow

PROGRAM = """# Math
Doubles numbers with a Python function that lives beside the program.

## Double($x:int) -> int
metadata:
  public: true
  python: {module}:double
---
Doubles x.
"""


def _module(folder: Path, name: str, factor: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(f"def double(x):\n    return x * {factor}\n", encoding="utf-8")


def _program(folder: Path, module: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "math.pal"
    path.write_text(PROGRAM.format(module=module), encoding="utf-8")
    return path


def test_a_module_beside_the_program_is_found_from_any_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _module(project, "doubling", 2)
    program = _program(project, "doubling")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_pal(
        "run", str(program), "--input", '{"x": 21}', "--quiet", *no_model(tmp_path), cwd=elsewhere
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == 42


def test_a_module_in_the_current_directory_is_found(tmp_path: Path) -> None:
    program = _program(tmp_path / "programs", "doubling")
    work = tmp_path / "work"
    _module(work, "doubling", 2)
    result = run_pal("run", str(program), "--input", '{"x": 5}', "--quiet", *no_model(tmp_path), cwd=work)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == 10


def test_the_program_folder_comes_before_the_current_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _module(project, "doubling", 2)
    program = _program(project, "doubling")
    work = tmp_path / "work"
    _module(work, "doubling", 1000)
    result = run_pal("run", str(program), "--input", '{"x": 3}', "--quiet", *no_model(tmp_path), cwd=work)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == 6


def test_a_missing_module_says_where_it_was_looked_for(tmp_path: Path) -> None:
    program = _program(tmp_path / "project", "nowhere_to_be_found")
    work = tmp_path / "work"
    work.mkdir()
    result = run_pal("run", str(program), "--input", '{"x": 3}', *no_model(tmp_path), cwd=work)
    assert result.returncode == 1
    assert "cannot import 'nowhere_to_be_found'" in result.stderr
    assert (
        f"looked in {(tmp_path / 'project').resolve()}, {work.resolve()} and Python's path" in result.stderr
    )


def test_a_python_block_imports_a_helper_beside_the_program(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _module(project, "helper_math", 3)
    program = project / "block.pal"
    program.write_text(
        "# Math\nTriples.\n\n```python\nfrom helper_math import double\n\n"
        "@playbook(public=True)\nasync def Triple(x: int) -> int:\n    return double(x)\n```\n",
        encoding="utf-8",
    )
    result = run_pal("run", str(program), "--input", '{"x": 4}', "--quiet", *no_model(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == 12


def test_the_python_api_follows_the_same_rule(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _module(project, "doubling", 2)
    program = _program(project, "doubling")
    script = (
        "import asyncio, sys\nfrom runtime.api import run_playbook\n"
        "print(asyncio.run(run_playbook(sys.argv[1], 'Double', x=8)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-P", "-c", script, str(program)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=pal_environment(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "16"


def test_module_folders_lists_the_program_folder_then_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _program(tmp_path / "project", "doubling")
    monkeypatch.chdir(tmp_path)
    assert module_folders(program) == ((tmp_path / "project").resolve(), tmp_path.resolve())
    assert module_folders(None) == (tmp_path.resolve(),)
    assert module_folders(tmp_path / "no-such.pal") == (tmp_path.resolve(),)
    monkeypatch.chdir(tmp_path / "project")
    assert module_folders(program) == ((tmp_path / "project").resolve(),)
