"""The chair's meeting playbook: the team's speaking policy and termination as PAL steps.

The chair runs the chat as AutoGen's group chat manager does: it says the task to the meeting, then
after each step (the task, then each reply) checks the termination conditions, picks the next
speaker(s), gives each the turn (`Say("meeting @Alice", "@Alice")`), waits in the meeting for the
answers (`WaitForMessage("meeting")`: a reply given to the chair ends the wait at once), and adds them
to the transcript `$messages`. The policy parts:

- round robin: `$order[$next]`;
- selector: `selector_func` (a Python playbook by import path) then `candidate_func` or the candidates
  without the previous speaker, then the model picks one by the selector prompt (a model turn);
- swarm: the target of the last hand-off (`$current`);
- GraphFlow: the ready queue and per-edge counters of AutoGen's GraphFlowManager, one variable each;
- MagenticOne: the orchestrator's ledgers as model turns;
- ag2: the allowed transitions, then round robin / random / the model / a selection function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from importers.autogen._model import Team
from importers.autogen._termination import TerminationSteps
from importers.common.steps import StepList, literal

MEETING_PLAYBOOK = "GroupChat"
"""The meeting playbook of the chair and of every participant."""
GRAPH_DONE = "Digraph execution is complete"


class ChairSteps:
    """Writes the chair's `GroupChat` steps for one team."""

    def __init__(self, team: Team, helper: Callable[[str], str], outside: str) -> None:
        self.team = team
        self.helper = helper
        self.outside = outside
        self.steps = StepList()
        self.termination = TerminationSteps(helper)
        self.notes: list[str] = []

    # --- shared parts ------------------------------------------------------------------------------

    def agents_map(self) -> dict[str, str]:
        mapping = {member.pal: member.name for member in self.team.members}
        mapping[self.team.name] = self.team.policy.options.get("speaker_name", self.team.title)
        mapping["human"] = self.outside
        initiator = self.team.policy.options.get("initiator")
        if initiator:
            mapping["@task"] = initiator
        return mapping

    def names_map(self) -> dict[str, str]:
        return {member.name: member.pal for member in self.team.members}

    def start(self) -> None:
        """The steps every chair starts with: the maps, fresh live agents, the task said to the meeting."""
        team, steps = self.team, self.steps
        steps.add("EXE", f"$agents:dict = {literal(self.agents_map())}")
        steps.add("EXE", f"$names:dict = {literal(self.names_map())}")
        steps.add("EXE", f"{self.helper('start_chat')}(team={literal(team.source)})")
        source = literal(self.team.policy.options.get("initiator") or "user")
        steps.add("EXE", f'$messages:list = [{{"source": {source}, "content": $task}}]')
        steps.add("QUE", "Say(meeting, $task)")
        steps.add("EXE", "$delta:list = $messages")
        steps.add("EXE", "$stop_reason = None")
        steps.add("EXE", "$turns:int = 0")
        steps.add("EXE", "$inbox:list = []")
        if team.termination is not None:
            self.termination.start(team.termination, steps)

    def write(self) -> tuple[Any, ...]:
        team, steps = self.team, self.steps
        if team.policy.kind == "magentic_one":
            from importers.autogen._magentic import write_magentic

            return write_magentic(self)
        self.start()
        policy = getattr(self, f"_init_{team.policy.kind}")
        policy()
        steps.label("check")
        self._check()
        getattr(self, f"_select_{team.policy.kind}")()
        steps.label("give")
        self._give_turns()
        steps.label("end")
        steps.add("EXE", '$result:dict = {"messages": $messages, "stop_reason": $stop_reason}')
        steps.add("RET", "$result")
        return steps.build()

    def stop(self, body: StepList, reason: str) -> None:
        """Steps that end the chat with `reason` (an expression)."""
        body.add("EXE", f"$stop_reason = {reason}")
        body.jump("end")

    def _check(self) -> None:
        team, steps = self.team, self.steps
        steps.add("EXE", "$last:dict = $delta[-1]")
        if team.policy.kind == "graph":
            body = StepList()
            self.stop(body, literal(GRAPH_DONE))
            steps.branch("If $ready == []", body)
        if team.framework == "ag2":
            self._ag2_termination_message()
        elif team.termination is not None:
            root = self.termination.check(team.termination, steps)
            steps.add("EXE", f"$stop_reason = {root}")
        body = StepList()
        body.jump("end")
        steps.branch("If $stop_reason != None", body)
        if team.max_turns is not None:
            body = StepList()
            if team.framework == "ag2":
                self.stop(body, literal(f"Maximum rounds ({team.max_turns}) reached"))
                steps.branch(f"If len($messages) >= {team.max_turns}", body)
            else:
                self.stop(body, literal(f"Maximum number of turns {team.max_turns} reached."))
                steps.branch(f"If $turns >= {team.max_turns}", body)

    def wait_for_reply(self, steps: StepList, label: object) -> None:
        """`$reply`: `$speaker`'s answer (its transcript entry), from what the chair has heard (`$inbox`, which
        may hold the answers of several speakers) or, when it is not there yet, after waiting in the meeting."""
        steps.label(label)
        steps.add(
            "EXE",
            f"$got:dict = {self.helper('chat_reply')}(heard=$inbox, speaker=$speaker, "
            f"chair={literal(self.team.name)}, agents=$agents)",
        )
        steps.add("EXE", '$inbox = $got["rest"]')
        steps.add("EXE", '$reply = $got["reply"]')
        body = StepList()
        body.add("EXE", '$heard:list = WaitForMessage("meeting")')
        body.add("EXE", "$inbox = $inbox + $heard")
        body.jump(label)
        steps.branch("If $reply == None", body)

    def _give_turns(self) -> None:
        """Give the turn to all of `$speakers` in ONE message, then take their replies in that order. One
        message, so that speakers who run in parallel (a GraphFlow fan-out) all answer from the same history:
        a turn given later could come after another speaker's reply, which that speaker must not hear."""
        steps = self.steps
        steps.add("EXE", "$i:int = 0")
        steps.add("EXE", '$turn:str = "meeting"')
        steps.add("EXE", '$call:str = ""')
        steps.label("turns")
        body = StepList()
        body.jump("send")
        steps.branch("If $i >= len($speakers)", body)
        steps.add("EXE", '$turn = $turn + " @" + $speakers[$i]')
        steps.add("EXE", '$call = $call + "@" + $speakers[$i] + " "')
        steps.add("EXE", "$i = $i + 1")
        steps.jump("turns")
        steps.label("send")
        steps.add("QUE", "Say($turn, $call)")
        steps.label("collect")
        steps.add("EXE", "$i = 0")
        steps.label("next reply")
        body = StepList()
        body.add("EXE", "$turns = $turns + 1")
        body.jump("check")
        steps.branch("If $i >= len($speakers)", body)
        steps.add("EXE", "$speaker = $speakers[$i]")
        self.wait_for_reply(steps, "wait")
        getattr(self, f"_after_{self.team.policy.kind}", lambda: None)()
        steps.add("EXE", "$messages = $messages + [$reply]")
        steps.add("EXE", "$delta = [$reply]")
        steps.add("EXE", "$i = $i + 1")
        steps.jump("next reply")

    # --- round robin ---------------------------------------------------------------------------------

    def _init_round_robin(self) -> None:
        self.steps.add("EXE", f"$order:list = {literal([m.pal for m in self.team.members])}")
        self.steps.add("EXE", "$next:int = 0")

    def _select_round_robin(self) -> None:
        steps = self.steps
        steps.add("EXE", "$speakers:list = [$order[$next]]")
        steps.add("EXE", f"$next = ($next + 1) % {len(self.team.members)}")

    # --- swarm ---------------------------------------------------------------------------------------

    def _init_swarm(self) -> None:
        self.steps.add("EXE", f"$current:str = {literal(self.team.members[0].pal)}")

    def _select_swarm(self) -> None:
        self.steps.add("EXE", "$speakers:list = [$current]")

    def _after_swarm(self) -> None:
        body = StepList()
        body.add("EXE", '$current = $names[$reply["handoff"]]')
        self.steps.branch('If "handoff" in $reply and $reply["handoff"] in $names', body)

    # --- selector ------------------------------------------------------------------------------------

    def _init_selector(self) -> None:
        steps = self.steps
        names = [m.name for m in self.team.members]
        steps.add("EXE", f"$all:list = {literal(names)}")
        steps.add("EXE", f"$others:dict = {literal({n: [o for o in names if o != n] for n in names})}")
        steps.add("EXE", "$previous = None")
        options = self.team.policy.options
        roles = "\n".join(" ".join(f"{m.name}: {m.description}".split()) for m in self.team.members)
        prompt = str(options["prompt"])
        prompt = prompt.replace("{roles}", roles).replace("{participants}", "$candidates")
        prompt = prompt.replace("{history}", "$messages (each entry's source and content)")
        self.notes.append(f"To choose the next speaker: {' '.join(prompt.split())}")

    def _select_selector(self) -> None:
        steps, options = self.steps, self.team.policy.options
        if options.get("selector_func"):
            steps.add(
                "EXE",
                f"$choice = {self.helper('selector_choice')}(func={literal(options['selector_func'])}, "
                "messages=$messages)",
            )
            body = StepList()
            body.add("EXE", "$speakers:list = [$names[$choice]]")
            body.jump("give")
            steps.branch("If $choice != None and $choice in $names", body)
        if options.get("candidate_func"):
            steps.add(
                "EXE",
                f"$candidates:list = {self.helper('candidates')}(func={literal(options['candidate_func'])}, "
                "messages=$messages)",
            )
        elif options["allow_repeated_speaker"]:
            steps.add("EXE", "$candidates:list = $all")
        else:
            steps.add("EXE", "$candidates:list = $all")
            body = StepList()
            body.add("EXE", "$candidates = $others[$previous]")
            steps.branch("If $previous != None", body)
        body = StepList()
        body.add("EXE", "$choice = $candidates[0]")
        body.jump("chosen")
        steps.branch("If len($candidates) == 1", body)
        steps.add("EXE", "$attempt:int = 0")
        steps.label("ask")
        steps.add(
            "EXE",
            "$choice = the name of the next speaker: exactly one of $candidates, chosen as note N1 says",
        )
        body = StepList()
        body.jump("chosen")
        steps.branch("If $choice in $candidates", body)
        steps.add("EXE", "$attempt = $attempt + 1")
        body = StepList()
        body.jump("ask")
        steps.branch(f"If $attempt < {int(options['max_attempts'])}", body)
        steps.add("EXE", "$choice = $candidates[0]")
        body = StepList()
        body.add("EXE", "$choice = $previous")
        steps.branch("If $previous != None", body)
        steps.label("chosen")
        steps.add("EXE", "$previous = $choice")
        steps.add("EXE", "$speakers:list = [$names[$choice]]")

    # --- GraphFlow -----------------------------------------------------------------------------------

    def _graph_groups(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Each (target, activation group) with its index, edge count and activation."""
        nodes = self.team.policy.options["nodes"]
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        for edges in nodes.values():
            for edge in edges:
                key = (edge["target"], edge["group"])
                if key not in groups:
                    groups[key] = {"index": len(groups) + 1, "count": 0, "activation": edge["activation"]}
                groups[key]["count"] += 1
        return groups

    def _init_graph(self) -> None:
        steps = self.steps
        names = self.names_map()
        for group in self._graph_groups().values():
            index = group["index"]
            if group["activation"] == "all":
                steps.add("EXE", f"$wait{index}:int = {group['count']}")
            else:
                steps.add("EXE", f"$queued{index}:bool = False")
            steps.add("EXE", f"$fired{index}:bool = False")
        start = [names[name] for name in self.team.policy.options["start"]]
        steps.add("EXE", f"$ready:list = {literal(start)}")

    def _select_graph(self) -> None:
        steps = self.steps
        names = self.names_map()
        steps.add("EXE", "$speakers:list = $ready")
        steps.add("EXE", "$ready = []")
        by_target: dict[str, list[dict[str, Any]]] = {}
        for (target, _), group in self._graph_groups().items():
            by_target.setdefault(target, []).append(group)
        for target, groups in by_target.items():
            body = StepList()
            for group in groups:
                index = group["index"]
                reset = StepList()
                if group["activation"] == "all":
                    reset.add("EXE", f"$wait{index} = {group['count']}")
                else:
                    reset.add("EXE", f"$queued{index} = False")
                reset.add("EXE", f"$fired{index} = False")
                body.branch(f"If $fired{index}", reset)
            steps.branch(f"If {literal(names[target])} in $speakers", body)

    def _after_graph(self) -> None:
        steps = self.steps
        groups = self._graph_groups()
        names = self.names_map()
        for source, edges in self.team.policy.options["nodes"].items():
            if not edges:
                continue
            body = StepList()
            for number, edge in enumerate(edges, start=1):
                group = groups[(edge["target"], edge["group"])]
                index = group["index"]
                update = StepList()
                ready = literal([names[edge["target"]]])
                if group["activation"] == "all":
                    update.add("EXE", f"$wait{index} = $wait{index} - 1")
                    fire = StepList()
                    fire.add("EXE", f"$ready = $ready + {ready}")
                    fire.add("EXE", f"$fired{index} = True")
                    update.branch(f"If $wait{index} == 0", fire)
                else:
                    fire = StepList()
                    fire.add("EXE", f"$ready = $ready + {ready}")
                    fire.add("EXE", f"$queued{index} = True")
                    fire.add("EXE", f"$fired{index} = True")
                    update.branch(f"If not $queued{index}", fire)
                condition = edge["condition"]
                if condition is None:
                    body.extend(update)
                elif "text" in condition and condition.get("negate"):
                    text = literal(condition["text"])
                    body.branch(f'If $reply["content"] == None or {text} not in $reply["content"]', update)
                elif "text" in condition:
                    text = literal(condition["text"])
                    body.branch(f'If $reply["content"] != None and {text} in $reply["content"]', update)
                elif "func" in condition:
                    flag = f"$edge{number}"
                    body.add(
                        "EXE",
                        f"{flag}:bool = {self.helper('edge_condition')}(func={literal(condition['func'])}, "
                        "message=$reply)",
                    )
                    body.branch(f"If {flag}", update)
            if body.has_steps():
                steps.branch(f'If $reply["source"] == {literal(source)}', body)

    # --- ag2 -----------------------------------------------------------------------------------------

    def _init_ag2(self) -> None:
        steps, options = self.steps, self.team.policy.options
        names = [m.name for m in self.team.members]
        steps.add("EXE", f"$order:list = {literal(names)}")
        steps.add("EXE", f"$transitions:dict = {literal(options['transitions'])}")
        steps.add("EXE", f"$fallback:dict = {literal(options['fallback'])}")
        steps.add("EXE", f"$last_speaker:str = {literal(options['initiator'])}")
        if options.get("executes"):
            steps.add("EXE", f"$executes:dict = {literal(options['executes'])}")
        if options.get("select_prompt"):
            self.notes.append(
                f"To choose the next speaker: {' '.join(str(options['select_prompt']).split())}"
            )

    def _ag2_termination_message(self) -> None:
        steps, options = self.steps, self.team.policy.options
        reason = literal(f"Termination message condition on the GroupChatManager '{self.team.title}' met")
        check = options.get("termination")
        body = StepList()
        self.stop(body, reason)
        if check == "default":
            steps.branch('If $last["content"] == "TERMINATE"', body)
        elif check:
            steps.add(
                "EXE",
                f"$terminated:bool = {self.helper('termination_message')}(func={literal(check)}, message=$last)",
            )
            steps.branch("If $terminated", body)

    def _select_ag2(self) -> None:
        steps, options = self.steps, self.team.policy.options
        method = options["method"]
        steps.add("EXE", f"$method:str = {literal(method if method != 'callable' else 'auto')}")
        if method == "callable":
            steps.add(
                "EXE",
                f"$selection:dict = {self.helper('speaker_selection')}(func={literal(options['func'])}, "
                f"team={literal(self.team.source)}, last=$last_speaker, messages=$messages)",
            )
            body = StepList()
            self.stop(body, '"No next speaker selected"')
            steps.branch('If "speaker" in $selection and $selection["speaker"] == None', body)
            body = StepList()
            body.add("EXE", '$choice = $selection["speaker"]')
            body.jump("chosen")
            steps.branch('If "speaker" in $selection', body)
            steps.add("EXE", '$method = $selection["method"]')
        steps.add("EXE", "$eligible:list = $fallback[$last_speaker]")
        body = StepList()
        body.add("EXE", "$eligible = $transitions[$last_speaker]")
        steps.branch("If $last_speaker in $transitions", body)
        body = StepList()
        self.stop(body, '"No next speaker selected"')
        steps.branch("If $last_speaker in $order and $last_speaker not in $transitions", body)
        body = StepList()
        body.add("EXE", "$eligible = $fallback[$last_speaker]")
        steps.branch("If $eligible == []", body)
        if options.get("executes"):
            body = StepList()
            body.add(
                "EXE",
                f"$eligible = {self.helper('tool_executors')}(message=$last, executes=$executes, candidates=$eligible)",
            )
            stop = StepList()
            self.stop(stop, '"No next speaker selected"')
            body.branch("If $eligible == []", stop)
            steps.branch('If "tool_calls" in $last', body)
        body = StepList()
        body.add("EXE", "$choice = $eligible[0]")
        body.jump("chosen")
        steps.branch("If len($eligible) == 1", body)
        body = StepList()
        body.add("EXE", f"$choice = {self.helper('random_choice')}(eligible=$eligible)")
        body.jump("chosen")
        steps.branch('If $method == "random"', body)
        body = StepList()
        body.add(
            "EXE", "$choice = the name of the next speaker: exactly one of $eligible, chosen as note N1 says"
        )
        body.jump("validate")
        steps.branch('If $method == "auto"', body)
        steps.label("in order")
        steps.add(
            "EXE",
            f"$choice = {self.helper('next_in_order')}(order=$order, last=$last_speaker, eligible=$eligible)",
        )
        steps.jump("chosen")
        steps.label("validate")
        body = StepList()
        body.jump("in order")
        steps.branch("If $choice not in $eligible", body)
        steps.label("chosen")
        steps.add("EXE", "$speakers:list = [$names[$choice]]")

    def _after_ag2(self) -> None:
        body = StepList()
        self.stop(body, '"No reply generated"')
        self.steps.branch('If $reply["content"] == None', body)
        self.steps.add("EXE", '$last_speaker = $reply["source"]')
