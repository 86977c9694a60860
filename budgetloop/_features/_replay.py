"""``replay``: a saved run again, offline, under new options; ``first_divergence`` of two runs.

The replay is the real loop: a ``ScriptedModel`` plays back the recorded completions, stand-in
tools built from the recorded schemas give back the recorded results, and a virtual clock takes
the recorded time. So every budget rule decides as it would have: with no options the run is
reproduced, and under a new ``budget`` it stops where that budget would have stopped it.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace as with_fields
from typing import TYPE_CHECKING, Any

from .._engine._options import ReplayOptions, check_names, option_names
from .._engine._session import Session
from .._engine._stream import CUT
from .._engine._types import Budget, Chunk, Completion, Message, Stop, to_pico
from .._importers._replaying import replay_schemas
from .._schema._tool import Tool
from .._schema._written import checkable
from .._tools._approval import Approve, Decision, PendingCall, edited
from .._tools._dispatch import ABANDONED
from .._trace._fork import context_before
from .._trace._journal import Trace, as_result
from .._trace._result import EXECUTED, CallRecord, Result, Step, summaries_pico
from ._output import FINAL_ANSWER
from ._recorded import billed_error, completion_of, played_error, recorded_error
from ._scripted import ScriptedModel

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11; the annotations are never evaluated on 3.10

_TRUNCATED = re.compile(
    r"\n\[truncated: the result had (\d+) characters; the first (\d+) are shown\]\Z"
)
_REPEATED = re.compile(r"the same tool calls (\d+) turns running")
_CYCLE = re.compile(r"a cycle of \d turns repeated (\d+) times")
_OWN = "the replay's own: the recorded model, tools and clock"
_NOT_OPTIONS = {
    "trace_path": "save the result instead",
    **dict.fromkeys(("complete", "prompt", "tools", "clock"), _OWN),
}


class ReplayClock:
    """A clock that moves only as the recording says: a model call by its recorded time, a
    tool batch to the end of its longest recorded call (the calls of a batch run at once).

    The calls of a batch may run one after another on one thread, so each call's own time is
    its thread's: the reading that ends a call is the one its start read plus its recorded
    seconds, whatever the calls before it on that thread moved the shared time to."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()
        self._thread = threading.local()  # per thread: the last reading, and a call's end

    def __call__(self) -> float:
        here = self._thread
        now: float | None = getattr(here, "ends", None)
        if now is None:
            now = self.now
        here.ends, here.read = None, now
        return now

    def advance(self, seconds: float) -> float:
        with self._lock:
            self.now += seconds
            return self.now

    def at_least(self, when: float) -> None:
        with self._lock:
            self.now = max(self.now, when)

    def call_takes(self, seconds: float) -> None:
        """The tool call running on this thread ends ``seconds`` after it started (the last
        reading on this thread): the next reading here says so."""
        here = self._thread
        here.ends = getattr(here, "read", self.now) + seconds


def _ran(record: CallRecord) -> bool:
    """Whether the tool itself was called (the replay's stand-in is then called too)."""
    return record.status in EXECUTED and (
        record.arguments is not None or record.error == ABANDONED
    )


class Tape:
    """The recorded steps, played to the model and the stand-in tools of one replay."""

    def __init__(self, steps: tuple[Step, ...], clock: ReplayClock) -> None:
        self.steps = steps
        self.clock = clock
        self._lock = threading.Lock()
        self._step: Step | None = None
        self._used: set[int] = set()
        self._batch_start = 0.0
        self.interrupt: Callable[[], None] | None = None  # the replayed session's interrupt()

    def model_turn(self, step: Step) -> None:
        """Step ``step`` begins: its model call takes its recorded time, less its batch's."""
        batch = max((r.seconds for r in step.tool_calls if _ran(r)), default=0.0)
        end = self.clock.advance(max(0.0, step.seconds - batch))
        with self._lock:
            self._step, self._used, self._batch_start = step, set(), end

    def outcome(self, name: str, args: dict[str, Any]) -> CallRecord | None:
        """The recorded record of this call in the current step: the first unused one with this
        name and these checked arguments (or arguments the recording does not know: a call
        abandoned at the deadline). A result answers only the arguments it ran with: a call
        whose arguments differ (a person edited it, in the recording or in the replay) has
        none."""
        with self._lock:
            if self._step is None:
                return None
            found = next(((i, r) for i, r in enumerate(self._step.tool_calls)
                          if i not in self._used and r.name == name and _ran(r)
                          and r.arguments in (args, None)), None)  # fmt: skip
            if found is None:
                return None
            i, record = found
            self._used.add(i)
            start = self._batch_start
        self.clock.at_least(start + record.seconds)
        self.clock.call_takes(record.seconds)
        return record


class RecordedTool(Tool):
    """A stand-in for a tool whose function is not in the trace: the recorded schema, and the
    recorded result of each call."""

    def __init__(self, schema: Any, tape: Tape, where: str) -> None:
        # The schema is given, not built from a signature, so Tool.__init__ is not called.
        params = schema.get("parameters") if isinstance(schema, dict) else None
        props = params.get("properties") if isinstance(params, dict) else None
        required = params.get("required", []) if isinstance(params, dict) else None
        name = schema.get("name") if isinstance(schema, dict) else None
        if (
            not isinstance(name, str)
            or not isinstance(props, dict)
            or not isinstance(required, list)
        ):
            raise ValueError(
                f"{where} must be a tool schema with a name and parameters.properties, "
                f"got {json.dumps(schema, default=repr)[:80]}."
            )
        self.name = name
        self.description = str(schema.get("description", ""))
        found = checkable(params)  # a schema written elsewhere (an MCP server's) is checked
        self.parameters = found.parameters  # as far as the check can, as in the recorded run
        self.required = found.required
        self._defs = found.defs
        self.extra_arguments = found.extra
        self.is_async = False
        self._recorded = schema
        self._tape = tape
        self.fn = self._respond

    @property
    def schema(self) -> dict[str, Any]:
        """The schema as recorded, so the replay's requests count as the recorded ones did."""
        return dict(self._recorded)

    def _respond(self, **args: Any) -> str:
        record = self._tape.outcome(self.name, args)
        if record is None:
            raise LookupError(  # the model reads this
                f"{self.name}: the recorded run has no result for this call (it was not run "
                "there), so a replay cannot say what the tool would have returned"
            )
        if record.status == "ok":
            return _full_length(record)
        raise recorded_error(record.error or "")


def _full_length(record: CallRecord) -> str:
    """An ok record's result as the tool returned it, as far as the trace knows: a result that
    was cut is its kept part padded with spaces to its recorded length, so the same
    ``max_result_chars`` cuts it at the same place with the same note."""
    text = record.result or ""
    match = _TRUNCATED.search(text) if record.truncated is not None else None
    if match is None:
        return text
    full, kept = int(match.group(1)), int(match.group(2))
    return text[:kept] + " " * max(0, full - kept)


def _defaults(result: Result) -> dict[str, Any]:
    """The options the trace implies: those it records, and for a trace written before they
    were recorded, what its records reveal."""
    limit = None
    for record in (c for s in result.steps for c in s.tool_calls):
        match = _TRUNCATED.search(record.result or "") if record.truncated is not None else None
        if match is not None:
            limit = int(match.group(2))
            break
    repeat = cycle = None  # no repeat stop happened, so none happens on the same completions
    if result.stop is Stop.REPEATED:
        found = _REPEATED.search(result.detail or "")
        repeat = int(found.group(1)) if found else 3
        looped = _CYCLE.search(result.detail or "")
        cycle = int(looped.group(1)) if looped else None
    revealed = {
        "finish": any(s.final_answer for s in result.steps),
        "cycle_limit": cycle,
        "repeat_limit": repeat,
        "max_result_chars": limit,
    }
    return {
        **revealed,
        **result.options,
        "budget": result.budget,
        "price": result.price,
        "max_output_tokens": result.max_output_tokens,
    }


def replay(trace: Trace, **options: Unpack[ReplayOptions]) -> Result:
    """Run a saved run again, offline, with its recorded completions and tool results.

    ``trace`` is a ``Result``, ``Result.to_dict()`` data or a path. ``options`` are ``start()``
    options: ``budget`` above all; ``price`` (a ``Price``, or a model name as ``start()`` takes
    it), ``max_output_tokens`` and the options the trace
    records (``Result.options``: ``finish``, ``budget_note``, the repetition guard,
    ``max_result_chars``) default to the trace's, so every rule the loop applied applies again
    (a new budget changes only where the run stops). With no options the result has the
    recorded steps, calls, results, costs and stop. A fork is replayed as it ran: from the
    spend it carried, its inherited steps taken again as its source took them. A run whose
    cost is unknown (an imported log) replayed without a ``price`` stays unknown: its
    ``cost_usd`` and its steps' are None.

    The functions are not in the trace: each tool is a stand-in with its recorded schema that
    returns, per call, the recorded result or raises the recorded error (recorded again as
    its recorded text, word for word: what the model read). Time is virtual: a model call
    takes its recorded time, a tool batch its longest call's. A run that would go on past the
    last recorded step (a larger budget) ends with ``stop`` None and a ``detail`` saying so:
    what the model said next was never recorded. A streamed reply the run cut (at the deadline,
    or by ``interrupt()``) streams again what arrived and is cut where it was; with more time
    it ends there instead, and the run goes on past the recording. But a run imported from
    another framework, whose end its source recorded and whose limits it did not, ends there as
    the source ended it (the recorded ``stop``, ``answer``, ``error`` and ``detail``: its
    limit, the exception it raised, or the structured answer it took from a tool call); so does
    one whose recorded cost limit the replay has no price to apply (budgetloop's own spans keep
    the limit, not the price; pass ``price`` to apply it). A call the recorded run did not run
    (it was skipped, or denied), or did not run with these arguments (``approve=fn``
    edited it), comes back as an error saying it has no recorded result.

    The calls a person decided (``CallRecord.approval``) are held again and decided as
    recorded: approved, edited (run with the recorded arguments) or denied (with the recorded
    reason). ``approve=fn`` asks ``fn`` about them instead: what if a call had been denied?

    A step a context policy (``context=``) made the request of is sent the request it recorded
    (``Step.context``), and a summary it recorded is billed at its recorded cost, without
    calling its summarizer; ``context=`` given here applies that policy instead.
    """
    result = as_result(trace, "replay")
    check_names("replay", options, option_names(ReplayOptions), _NOT_OPTIONS)
    _source_max_tokens(result, options)
    clock = ReplayClock()
    tape = Tape(result.steps, clock)
    schemas = replay_schemas(result)  # an imported run's tools without a schema: stand-ins
    if "output" in result.options:  # final_answer is the loop's own, made from the option
        schemas = tuple(s for s in schemas if s.get("name") != FINAL_ANSWER)
    tools = [RecordedTool(s, tape, f"replay: tools[{i}]") for i, s in enumerate(schemas)]
    servers = {c.name: c.server for s in result.steps for c in s.tool_calls if c.server}
    for stand_in in tools:  # an MCP tool's calls name its server in the replay too
        stand_in.server = servers.get(stand_in.name)
    model = ScriptedModel(
        [_entry(step, tape, result) for step in result.steps],
        price=result.price,
        max_output_tokens=result.max_output_tokens,
        count_usage=False,
    )
    decided = {(s.index, r.id): r for s in result.steps for r in s.tool_calls if r.approval}
    given = {"tools": tools, "clock": clock, "approve": _recorded_decisions(decided),
             **_defaults(result), **options}  # fmt: skip
    ends = _source_ends(result)
    if _unpriced_limit(result, given):  # a cost limit the replay cannot apply: the source's end
        given["budget"] = with_fields(given["budget"], max_cost_usd=None)
        ends = result.stop is not None
    replayed = _run_again(result, model, _prompt(result), given, frozenset(decided), ends, tape)
    recorded = len(result.steps)
    if ends and replayed.stop in (None, Stop.ANSWERED) and len(replayed.steps) == recorded:
        # the recording is over, and so is the run: its source ended it here, as it says (a
        # reply the loop takes as the answer too: the source may have withheld it)
        return with_fields(replayed, stop=result.stop, answer=result.answer,
                           output=result.output, error=result.error,
                           detail=result.detail)  # fmt: skip
    if model.calls <= recorded:
        return replayed
    # The run asked the model for a step the recording does not have: it would have gone on.
    return with_fields(
        replayed,
        steps=replayed.steps[:recorded],
        stop=None,
        answer=None,
        error=None,
        detail=(
            f"replay: the run goes on past the {recorded} recorded steps, and what the model "
            "said next was never recorded"
        ),
    )


def _source_ends(result: Result) -> bool:
    """Whether the recording ends where the run's source ended it, by rules the trace does
    not hold: an imported run whose end is known and whose limits are not (another
    framework's request limit, an exception it raised, the structured answer it took from a
    tool call). A replay that gets there ends as the source did; budgetloop's own runs, and
    imports that keep their budget, are ended by the rules the replay applies again."""
    imported = result.imported
    return imported is not None and "budget" in imported.lacks and result.stop is not None


def _unpriced_limit(result: Result, given: Mapping[str, Any]) -> bool:
    """Whether the replay would apply the cost limit an imported run recorded (budgetloop's
    own spans keep the budget, not the price) with no price to project a turn by, none given:
    that limit is left to the source, which recorded where it stopped the run."""
    budget = given["budget"]
    return (
        result.imported is not None
        and given["price"] is None
        and budget is result.budget
        and budget is not None
        and budget.max_cost_usd is not None
    )


def _prompt(result: Result) -> list[Message]:
    """The context the run began with. An imported run its source ended right after a turn
    that asked for tools has that turn's assistant message last, and no results after it (no
    model read them): the context is found from the messages before it."""
    messages, steps = result.messages, result.steps
    last = steps[-1] if steps else None
    if (
        _source_ends(result)
        and last is not None
        and last.error is None
        and last.tool_calls
        and messages
        and messages[-1].role == "assistant"
    ):
        messages, steps = messages[:-1], steps[:-1]
    return list(messages[: context_before(messages, steps, 0, "replay")])


def _run_again(
    result: Result,
    model: ScriptedModel,
    prompt: list[Message],
    given: dict[str, Any],
    holds: frozenset[tuple[int, str]],
    ends: bool,
    tape: Tape,
) -> Result:
    """The replayed run. A fork is replayed as it ran: the steps it inherited are taken again
    as its source took them (no ceiling of the fork's stops them; of the source's, the trace
    keeps the cost limit its projections saw), then the fork goes on from there under its own
    options, on all the spend it carried. ``holds`` are the calls the recording held for a
    person; ``ends``: the run pauses once it has taken every recorded step (its source ended
    it there); ``tape`` is told the session, for a cut reply a person interrupted."""
    carried = to_pico(result.carried_usd)  # its source's spend after the fork point
    inherited = _inherited(result, carried)
    opening = given
    if inherited:  # the source's budget, as far as the trace knows it: its cost limit (none
        first = result.steps[0].projection  # with no price to project by: see _unpriced_limit)
        known = first is not None and given["price"] is not None
        opening = {
            **given,
            "budget": Budget(max_cost_usd=first.limit_usd if known and first else None),
        }
    source = Session._open("replay", model, prompt, opening)
    if result.cost_usd is None and given["price"] is None:  # unknown, and nothing to price it
        source.state.money.known = False
    source._hold_calls = holds
    tape.interrupt = source.interrupt
    edits = {s.index: s.context for s in result.steps if s.context is not None}
    if edits and given.get("context") is None:  # each step sent what it was sent, summaries
        source._compacting(edits)  # billed as recorded: no summarizer is called again
    for _ in range(inherited):
        source.step()
    source.state.money.carry(carried)
    if inherited:
        source = source._fork("replay", None, None, {"budget": given["budget"]})
        source._hold_calls = holds
        tape.interrupt = source.interrupt
        if edits and given.get("context") is None:
            source._compacting(edits)
    source.forked_from = result.forked_from  # the same lineage as the run it replays
    recorded = len(result.steps)
    if not ends:
        return source.run()
    if len(source.steps) >= recorded:  # the source ended it before any model call (an input
        return source.result  # guardrail), or every step is one the fork inherited
    return source.run(lambda session: len(session.steps) >= recorded)


def _inherited(result: Result, carried: int) -> int:
    """How many of a fork's steps it inherited: its own begin where a step's projection
    counts the carried spend as spent (0 for a run that carries none)."""
    if carried <= 0:
        return 0
    before = 0
    for step in result.steps:
        seen = step.projection
        if seen is None:  # a step whose worst case was not recorded: the fork's own from here
            return step.index
        before += summaries_pico((step,))  # a summary made for it: spent before its projection
        if to_pico(seen.spent_usd) >= before + carried - len(result.steps):
            return step.index
        before += to_pico(step.cost_usd or 0.0)
    return len(result.steps)


def _recorded_decisions(decided: Mapping[tuple[int, str], CallRecord]) -> Approve:
    """The replay's ``approve`` when none is given: each held call decided as the recording
    says (an edit with the arguments it ran with, a denial with its reason and error)."""

    def recorded(call: PendingCall) -> Decision | bool:
        record = decided.get((call.step, call.id))
        if record is None or record.approval == "approved":
            return True
        if record.approval == "edited" and record.arguments is not None:
            return edited(call, record.arguments)
        return Decision("denied", reason=record.result or "", error=record.error,
                        traceback=record.traceback)  # fmt: skip

    return recorded


def _source_max_tokens(result: Result, options: Mapping[str, Any]) -> None:
    """An imported run is replayed with the output ceiling its source recorded
    (``gen_ai.request.max_tokens``), which ``_defaults`` gives; a different one passed is an
    error rather than a projection the run never made."""
    given, recorded = options.get("max_output_tokens"), result.max_output_tokens
    if result.imported is None or recorded is None or given is None or given == recorded:
        return
    raise ValueError(
        f"replay: max_output_tokens must be left out for this imported run, got {given!r}: its "
        f"source recorded {recorded} (gen_ai.request.max_tokens), and the replay projects with "
        "what the run asked for."
    )


def _entry(step: Step, tape: Tape, result: Result) -> Any:
    if _cut(step, result):
        return functools.partial(_cut_again, step, tape, result.stop)
    error = step.error
    if error is not None:  # raised again, billed as it was
        played: Completion | None = billed_error(step, result.price, "replay")
    else:
        played = completion_of(step, result.price, "replay")

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Completion:
        tape.model_turn(step)
        if error is not None:
            raise played_error(error, played)
        assert played is not None
        return played

    return play


def _cut(step: Step, result: Result) -> bool:
    """Whether ``step`` is a streamed reply the run cut before it ended (its last step: the
    deadline or a person stopped the run there)."""
    last = step is result.steps[-1] and result.stop is not None
    return last and step.finish_reason == CUT and step.error is None


def _cut_again(
    step: Step, tape: Tape, stop: Stop | None, messages: list[Message], tools: Any
) -> Iterator[Chunk]:
    """A cut reply played back as it streamed: what arrived (its text, each call's pieces and
    a usage that came), then its recorded time passes (the deadline with it) or the person
    interrupts, and the loop cuts it at the next chunk, as it was cut."""
    yield Chunk(text=step.text or "", usage=step.usage, model=step.model,
                response_id=step.response_id)  # fmt: skip
    for index, call in enumerate(step.tool_calls):
        arguments = call.raw_arguments if isinstance(call.raw_arguments, str) else ""
        yield Chunk(index=index, id=call.id, name=call.name, arguments=arguments)
    tape.model_turn(step)
    if stop is Stop.INTERRUPTED and tape.interrupt is not None:
        tape.interrupt()
    yield Chunk()  # not read: the reply is cut before it (unless a new budget lets it end)


# -- comparing two runs -------------------------------------------------------------------------


def first_divergence(a: Trace, b: Trace) -> int | None:
    """The index of the first step where two runs differ in what the model said or in what came
    of it: its text, its tool calls (names and arguments, compared parsed, so key order and
    spacing do not count; ids are not compared), its error, and each call's outcome (its status,
    the decision on it, and the result or error the model read). None if they agree; a run that
    is a prefix of the other diverges at the shorter one's length."""
    first = as_result(a, "first_divergence", "a")
    second = as_result(b, "first_divergence", "b")
    for index, (x, y) in enumerate(zip(first.steps, second.steps, strict=False)):
        if _said(x) != _said(y):
            return index
    if len(first.steps) != len(second.steps):
        return min(len(first.steps), len(second.steps))
    return None


def _said(step: Step) -> tuple[Any, ...]:
    calls = [(c.name, _arguments(c), c.status, c.approval, c.content) for c in step.tool_calls]
    return (step.text, step.error, calls)


def _arguments(record: CallRecord) -> str:
    """The arguments in one canonical form: a JSON string parsed (blank is ``{}``, as the loop
    reads it), then written with sorted keys; text that is not JSON is compared as written."""
    raw = record.raw_arguments
    value: Any = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return "text:" + raw
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
