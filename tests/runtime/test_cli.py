"""The `pal` command line, run as a user runs it (in-process through main(), and once as a subprocess)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.cli import main
from tests.conftest import CORPUS, FIXTURES

SEED_PB = FIXTURES / "pb" / "seed_customer_support.pb"
SEED_PAL = FIXTURES / "pal" / "seed_customer_support.pal"


def test_validate_prints_file_line_col_code_and_fails_on_errors(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.pal"
    bad.write_text(
        "# Shop\n\n## Main() -> None\n### Steps\n01:QUE hello\n01:QUE again\n02:JMP 09\n", encoding="utf-8"
    )
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr()
    lines = [line for line in out.out.splitlines() if line.startswith(str(bad))]
    assert lines[0].startswith(f"{bad}:6:1: PAL101 ")
    assert any(line.startswith(f"{bad}:7:") and " PAL111 " in line for line in lines)
    assert "error(s)" in out.err


def test_validate_reports_syntax_errors_the_same_way(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "syntax.pal"
    bad.write_text("# Shop\n\n## Main() -> None\n### Steps\nnot a step\n", encoding="utf-8")
    assert main(["validate", "--no-source", str(bad)]) == 1
    assert (
        capsys.readouterr().out.splitlines()[0]
        == f"{bad}:5:1: PAL003 step must look like '01:OPC text' (two-digit line numbers, dots for sub-steps)"
    )


def test_validate_passes_the_whole_corpus(capsys) -> None:
    assert main(["validate", *map(str, sorted(CORPUS.glob("*.pbasm")))]) == 0
    assert "0 error(s)" in capsys.readouterr().err


def test_fmt_check_and_rewrite(tmp_path: Path, capsys) -> None:
    target = tmp_path / "prog.pal"
    shutil.copy(CORPUS / "01-hello-playbooks.pbasm", target)
    assert main(["fmt", "--check", str(target)]) == 1
    assert "would reformat" in capsys.readouterr().out
    assert main(["fmt", str(target)]) == 0
    assert main(["fmt", "--check", str(target)]) == 0
    assert target.read_text(encoding="utf-8").startswith("# HelloWorld\n")


def test_compile_writes_the_seed_output(tmp_path: Path) -> None:
    output = tmp_path / "out.pal"
    assert main(["compile", str(SEED_PB), "-o", str(output)]) == 0
    compiled = output.read_text(encoding="utf-8").splitlines()
    expected = SEED_PAL.read_text(encoding="utf-8").splitlines()
    assert compiled[0] == expected[0] and compiled[2:] == expected[2:]


def test_json_and_schema(capsys) -> None:
    assert main(["json", str(SEED_PAL)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["agents"][0]["playbooks"][0]["steps"][2]["condition"]["kind"] == "if"
    assert main(["json", "--schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "PAL program"


def test_graph_draws_branches_jumps_and_calls(capsys) -> None:
    assert (
        main(["graph", str(CORPUS / "tutorials_03.01_Order_Support_Agent_6a901f96b774fe82.pbasm"), "Main"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("flowchart TD\n")
    assert "s05 -->|yes| s05_01" in out and "s05 -->|no| s06" in out
    assert "s05_04 -.->|jump| s05" in out
    assert '[["ValidateOrderId()"]]' in out


def test_graph_names_the_playbooks_when_one_is_missing(capsys) -> None:
    assert main(["graph", str(SEED_PAL), "Nope"]) == 1
    assert "available: CustomerSupport.Greeting" in capsys.readouterr().err


def test_run_with_a_scripted_model_messages_and_a_trace(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "\n".join(
            json.dumps({"text": text})
            for text in [
                '`Step["Greeting:01:QUE"]` `Say("user", "Order number?")`\n`Step["Greeting:02:YLD"]` yld user',
                '`Step["Greeting:03:CND"]` valid\n`Step["Greeting:04:QUE"]` looked up\n`Var[$status, "shipped"]`\n'
                '`Step["Greeting:05:QUE"]` `Say("user", "It has shipped.")`\n'
                '`Step["Greeting:06:RET"]` `Return[]` `Var[$__, "Reported the status."]`\nyld return',
            ]
        ),
        encoding="utf-8",
    )
    trace = tmp_path / "trace.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "runtime.cli",
            "run",
            str(SEED_PB),
            "--model",
            f"scripted:{answers}",
            "--message",
            "12345678",
            "--no-input",
            "--trace",
            str(trace),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Order number?" in result.stdout and "It has shipped." in result.stdout
    assert "\n[you -> CustomerSupport] 12345678\n" in result.stdout  # a scripted reply shows like a typed one
    closing = [line for line in result.stderr.splitlines() if line.startswith("[finished: ")]
    assert len(closing) == 1, result.stderr
    assert closing[0].startswith("[finished: nothing left to do (") and "; 2 model calls, " in closing[0]
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    steps = [(event["line"], event["opcode"]) for event in events if event["event"] == "step"]
    assert steps == [("01", "QUE"), ("02", "YLD"), ("03", "CND"), ("04", "QUE"), ("05", "QUE"), ("06", "RET")]
    assert {event["model_call"] for event in events if event["event"] == "step"} == {1, 2}


def test_run_input_calls_the_entry_playbook_and_prints_json(tmp_path: Path, capsys) -> None:
    program = tmp_path / "double.pal"
    program.write_text(
        "# Math\nDoubles numbers.\n\n## Double($x:int) -> int\nmetadata:\n  public: true\n---\n### Steps\n01:RET $x * 2\n",
        encoding="utf-8",
    )
    assert main(["run", str(program), "--input", '{"x": 21}', "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out) == 42


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.pal"], "missing.pal"),
        (["run", str(SEED_PAL), "--input", "[1]"], "JSON object"),
        (["run", str(SEED_PAL), "--input", "{}", "--playbook", "Nope"], "no playbook Nope"),
    ],
)
def test_run_reports_bad_input_clearly(args: list[str], message: str, capsys) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_check_turn_summary(tmp_path: Path, capsys) -> None:
    assert main(["check-turn", str(FIXTURES / "llm_responses_sample.jsonl")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "40 parsed, 0 failed"
    program = CORPUS / "playbooks-python-interop.pbasm"
    assert (
        main(
            [
                "check-turn",
                str(FIXTURES / "llm_responses_sample.jsonl"),
                "--program",
                str(program),
                "--at",
                "XY:01",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("40 parsed, 0 failed, ")
    assert "answer 19: ok:" in out  # the real answer that starts XY from line 01


def test_run_refuses_a_program_with_validation_errors(tmp_path: Path, capsys) -> None:
    program = tmp_path / "broken.pal"
    program.write_text(
        "# A\nB.\n\n## Main() -> None\n### Triggers\nT1:BGN At start\n### Steps\n01:JMP 07\n",
        encoding="utf-8",
    )
    assert main(["run", str(program), "--no-input"]) == 2
    err = capsys.readouterr().err
    assert f"{program}:8:" in err and "PAL111" in err
    assert "fix them before running" in err
