"""The flowchart the studio draws: one box per step, one path per edge of pal_core.flow (the graph `pal graph`
draws), back-edges on the left, the steps taken and the current one marked, text escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree

from pal_core.flow import flow
from pal_core.parser import parse
from runtime.studio.flowchart import LABEL_CHARS, flowchart_svg

PROGRAM = parse(
    """# Counter
Counts and branches.

```python
@playbook
async def Tally(n: int) -> int:
    return n
```

## Main() -> None
### Steps
01:EXE $n:int = 0
02:CND While $n < 3
  02.01:EXE $n = $n + 1
03:CND If $n > 5
  03.01:QUE Say(user, Too many <b>"things"</b> & more, far more than this box can show in one line)
04:CND Otherwise
  04.01:QUE $t:int = Tally(n=$n)
05:CND If the user wants more
  05.01:JMP 02
06:RET $n
""",
    file="counter.pal",
)


def _svg(**marks: object) -> ElementTree.Element:
    playbook = PROGRAM.agents[0].playbook("Main")
    assert playbook is not None
    return ElementTree.fromstring(flowchart_svg(playbook, **marks))  # well-formed XML


def test_every_step_is_a_box_and_every_edge_a_path() -> None:
    playbook = PROGRAM.agents[0].playbook("Main")
    assert playbook is not None
    graph = flow(playbook)
    svg = _svg()
    namespace = {"svg": "http://www.w3.org/2000/svg"}
    lines = [node.get("data-line") for node in svg.iterfind(".//svg:g[@data-line]", namespace)]
    assert lines == ["start", *(step.line for step in graph.order), "END"]
    edges = {
        (edge.get("data-from"), edge.get("data-to"), edge.get("class"))
        for edge in svg.iterfind(".//svg:g[@data-from]", namespace)
    }
    expected = {("start", "01", "edge next")}
    for step in graph.order:
        for edge in graph.edges_from(step.line):
            dashed = " dashed" if edge.kind.value in ("loop", "jump") else ""
            expected.add((step.line, edge.target, f"edge {edge.kind.value}{dashed}"))
    assert edges == expected
    assert ("02.01", "02", "edge loop dashed") in edges and ("05.01", "02", "edge jump dashed") in edges


def test_back_edges_run_left_of_the_boxes() -> None:
    text = flowchart_svg(PROGRAM.agents[0].playbook("Main"))  # type: ignore[arg-type]
    back = re.search(r'data-from="05.01" data-to="02"><path d="M(\d+),\d+ H(-?\d+)', text)
    assert back is not None and int(back.group(2)) < 0  # a lane left of every box


def test_steps_taken_and_the_current_one_are_marked() -> None:
    svg = _svg(taken={"01": 1, "02.01": 3}, current="04.01")
    namespace = {"svg": "http://www.w3.org/2000/svg"}
    classes = {
        node.get("data-line"): node.get("class", "")
        for node in svg.iterfind(".//svg:g[@data-line]", namespace)
    }
    assert classes["01"] == "node step taken" and classes["02.01"] == "node step taken"
    assert classes["04.01"] == "node step current" and classes["03"] == "node decision"
    counts = [text.text for text in svg.iterfind(".//svg:text[@class='count']", namespace)]
    assert counts == ["×1", "×3"]


def test_labels_are_escaped_shortened_and_whole_in_the_tooltip() -> None:
    text = flowchart_svg(PROGRAM.agents[0].playbook("Main"))  # type: ignore[arg-type]
    assert "<b>" not in text and "&lt;b&gt;" in text
    svg = _svg()
    namespace = {"svg": "http://www.w3.org/2000/svg"}
    box = next(node for node in svg.iterfind(".//svg:g[@data-line='03.01']", namespace))
    label = box.find("svg:text", namespace)
    title = box.find("svg:title", namespace)
    assert label is not None and title is not None
    assert len(label.text or "") == LABEL_CHARS and (label.text or "").endswith("…")
    assert (
        title.text
        == '03.01:QUE Say(user, Too many <b>"things"</b> & more, far more than this box can show in one line)'
    )


def test_a_python_playbook_is_one_box() -> None:
    tally = PROGRAM.agents[0].playbook("Tally")
    assert tally is not None
    text = flowchart_svg(tally)
    ElementTree.fromstring(text)
    assert "Tally: a Python playbook (no steps to draw)" in text
