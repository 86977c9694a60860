"""Configuration mistakes fail before any call, in one grammar: ``where: name must be <expected>,
got <what arrived>.`` ``where`` is the entry point the caller called (``start``, ``run``,
``astart``, ``arun``, ``fork``, ``resume``, ``replay``, ``run_many``); what arrived is a type for
a ``TypeError`` and a value for a ``ValueError``, and None is ``None``."""

from __future__ import annotations

import asyncio
import inspect
import math
import os
from collections.abc import Callable
from typing import Any, get_args

import pytest

from budgetloop import (
    Budget,
    Ledger,
    MemoryLedger,
    Message,
    Price,
    ScriptedModel,
    Session,
    arun,
    astart,
    replay,
    resume,
    run,
    run_many,
    start,
)
from budgetloop._engine._options import (
    OPTIONS,
    ForkOptions,
    ManyOptions,
    ReplayOptions,
    ResumeOptions,
    StartOptions,
    option_names,
)
from budgetloop._schema._shapes import SUPPORTED

MODEL = ScriptedModel(["ok"], price=Price(3.0, 15.0), max_output_tokens=100)
SAVED = run(ScriptedModel(["ok"], price=Price(3.0, 15.0), max_output_tokens=100), "go")
ENTRY_POINTS = ("start", "run", "astart", "arun", "fork", "resume", "replay", "run_many")
SAID = {"fork": "Session.fork"}  # what a message names: the method the user called
NOT_TAKEN = {"replay": {"tools", "clock", "trace_path"}, "run_many": {"trace_path"}}
NOWHERE = os.path.join(os.sep, "no-such-folder-for-budgetloop", "run.jsonl")


def f(x: int) -> int:
    """A tool."""
    return x


class DuckLedger:
    """Everything a ledger has, but not a Ledger."""

    limit_usd = 1.0

    def spent_usd(self) -> float:
        return 0.0

    def reserved_usd(self) -> float:
        return 0.0

    def _reserve_pico(self, pico: int) -> None:
        return None


ENTRY = {"start": start, "run": run, "astart": astart, "arun": arun}


def called(fn: Any, *args: Any, **options: Any) -> Any:
    """``fn(*args, **options)``, awaited when it is a coroutine."""
    made = fn(*args, **options)
    return asyncio.run(made) if inspect.iscoroutine(made) else made


def call(where: str, options: dict[str, Any]) -> Any:
    """The entry point ``where`` called with ``options`` (the rest as a working call has it)."""
    if where in ENTRY:
        return called(ENTRY[where], MODEL, "go", **options)
    if where == "fork":
        return start(MODEL, "go").fork(**options)
    if where == "resume":
        return resume(SAVED, MODEL, **{"tools": [], **options})
    if where == "replay":
        return replay(SAVED, **options)
    assert where == "run_many"
    return run_many(MODEL, ["go"], progress=False, **options)


# Each bad option, what it raises, and the message after ``where: ``.
BAD: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"tools": "f"}, TypeError, "tools must be a list of functions, got str."),
    ({"tools": None}, TypeError, "tools must be a list of functions, got None."),
    ({"tools": [f, 3]}, TypeError, "tools[1] must be a function, got int."),
    (
        {"tools": [f, f]},
        ValueError,
        "tools must be functions of distinct names, got two named 'f'. Pass @tool(name=...) to "
        "tell them apart.",
    ),
    ({"budget": {"max_steps": 3}}, TypeError, "budget must be a Budget or None, got dict."),
    ({"price": (3, 15)}, TypeError, "price must be a Price, a model name or None, got tuple."),
    (
        {"max_output_tokens": 1.5},
        TypeError,
        "max_output_tokens must be an int >= 0 or None, got float.",
    ),
    (
        {"max_output_tokens": -1},
        ValueError,
        "max_output_tokens must be an int >= 0 or None, got -1.",
    ),
    (
        {"min_output_tokens": 0},
        ValueError,
        "min_output_tokens must be an int >= 1 or None, got 0.",
    ),
    (
        {"min_output_tokens": 200},
        ValueError,
        "min_output_tokens must be at most max_output_tokens (100), got 200.",
    ),
    ({"settings": [("seed", 7)]}, TypeError, "settings must be a dict or None, got list."),
    (
        {"settings": {1: 2}},
        TypeError,
        "settings must be a dict with str keys, got a key that is int.",
    ),
    (
        {"settings": {"temperature": math.nan}},
        TypeError,
        "settings must be a dict of JSON values (numbers, strings, lists, dicts), which the "
        "trace keeps, got {'temperature': nan}.",
    ),
    ({"count_tokens": 3}, TypeError, "count_tokens must be a function or None, got int."),
    ({"system": 3}, TypeError, "system must be a str or None, got int."),
    ({"repeat_limit": 1}, ValueError, "repeat_limit must be an int >= 2 or None, got 1."),
    ({"cycle_limit": True}, TypeError, "cycle_limit must be an int >= 2 or None, got bool."),
    ({"clock": 1.0}, TypeError, "clock must be a function returning seconds, got float."),
    ({"clock": None}, TypeError, "clock must be a function returning seconds, got None."),
    ({"clock": lambda: "now"}, TypeError, "clock() must be a number of seconds, got str."),
    (
        {"clock": lambda: math.nan},
        ValueError,
        "clock() must be a finite number of seconds, got nan.",
    ),
    ({"max_workers": 0}, ValueError, "max_workers must be an int >= 1 or None, got 0."),
    (
        {"max_result_chars": "9"},
        TypeError,
        "max_result_chars must be an int >= 1 or None, got str.",
    ),
    ({"redact": "***"}, TypeError, "redact must be a function or None, got str."),
    ({"on_event": "print"}, TypeError, "on_event must be a function or None, got str."),
    (
        {"trace_path": 3},
        TypeError,
        "trace_path must be a str or os.PathLike path or None, got int.",
    ),
    (
        {"trace_path": NOWHERE},
        ValueError,
        f"trace_path must be a path in a folder that exists, got {NOWHERE!r} (no folder "
        f"{os.path.dirname(NOWHERE)!r}).",
    ),
    (
        {"ledger": object()},
        TypeError,
        "ledger must be a Ledger (MemoryLedger, SqliteLedger, RedisLedger) or None, got object.",
    ),
    (
        {"ledger": DuckLedger()},
        TypeError,
        "ledger must be a Ledger (MemoryLedger, SqliteLedger, RedisLedger) or None, "
        "got DuckLedger.",
    ),
    (
        {"ledger": MemoryLedger(1.0), "max_output_tokens": 0},
        ValueError,
        "max_output_tokens must be an int >= 1 with ledger=..., which reserves each call's worst "
        "case before it is sent, got 0. Pass it here, or give the model callable that "
        "attribute.",
    ),
    (
        {"budget": Budget(max_cost_usd=1.0), "max_output_tokens": 0},
        ValueError,
        "max_output_tokens must be an int >= 1 with Budget(max_cost_usd=...), which projects "
        "each turn's worst case before it is sent, got 0. Pass it here, or give the model "
        "callable that attribute.",
    ),
    ({"on_step": []}, TypeError, "on_step must be a function or None, got list."),
    (
        {"context": 5},
        TypeError,
        "context must be a context policy (policy(messages) -> list[Message], or Summarize) "
        "or None, got int.",
    ),
    ({"finish": None}, TypeError, "finish must be True or False, got None."),
    ({"warn_repeats": 1}, TypeError, "warn_repeats must be True or False, got int."),
    ({"budget_note": "yes"}, TypeError, "budget_note must be True or False, got str."),
    ({"approve": "yes"}, TypeError, "approve must be a function, 'hold' or None, got 'yes'."),
    (
        {"output": bytes},
        TypeError,
        f"output must be a type @tool accepts for a parameter ({SUPPORTED}), got bytes.",
    ),
    (
        {"output": "City"},
        TypeError,
        f"output must be a type @tool accepts for a parameter ({SUPPORTED}), got str.",
    ),
]


def table() -> list[Any]:
    rows = []
    for where in ENTRY_POINTS:
        for options, error, message in BAD:
            if set(options) & NOT_TAKEN.get(where, set()):
                continue
            name = "+".join(options)
            if where == "replay":  # its model is the recording's: only the call can give them
                message = message.replace(
                    "Pass it here, or give the model callable that attribute.",
                    "Pass it to replay: the trace records none.",
                )
            said = f"{SAID.get(where, where)}: {message}"
            rows.append(pytest.param(where, options, error, said, id=f"{where}-{name}"))
    return rows


@pytest.mark.parametrize(("where", "options", "error", "message"), table())
def test_a_wrong_option_is_named_with_the_entry_point_that_was_called(
    where: str, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    calls = MODEL.calls
    with pytest.raises(error) as caught:
        call(where, options)
    assert str(caught.value) == message
    assert MODEL.calls == calls  # nothing was sent


def test_the_table_covers_every_option_at_every_entry_point() -> None:
    every = set(option_names(StartOptions))
    assert {
        "replay": every - set(option_names(ReplayOptions)),
        "run_many": every - set(option_names(ManyOptions)),
    } == NOT_TAKEN
    for where in ENTRY_POINTS:
        rows = [p.values for p in table() if p.values[0] == where]
        assert {name for row in rows for name in row[1]} == every - NOT_TAKEN.get(where, set())


REPLAY = (
    "budget, price, max_output_tokens, count_tokens, system, repeat_limit, max_workers, "
    "max_result_chars, redact, ledger, on_step, on_event, finish, cycle_limit, warn_repeats, "
    "budget_note, "
    "approve, output, min_output_tokens, settings, context"
)


@pytest.mark.parametrize(
    ("where", "option", "message"),
    [
        ("fork", "bugdet", f"Session.fork: each option must be one of {REPLAY}, clock, trace_path, tools, complete, got 'bugdet'."),
        ("resume", "bugdet", f"resume: each option must be one of {REPLAY}, clock, trace_path, got 'bugdet'."),
        ("replay", "bugdet", f"replay: each option must be one of {REPLAY}, got 'bugdet'."),
        (
            "replay",
            "tools",
            f"replay: each option must be one of {REPLAY}, got 'tools' (the replay's own: the "
            "recorded model, tools and clock).",
        ),
        (
            "replay",
            "clock",
            f"replay: each option must be one of {REPLAY}, got 'clock' (the replay's own: the "
            "recorded model, tools and clock).",
        ),
        (
            "replay",
            "trace_path",
            f"replay: each option must be one of {REPLAY}, got 'trace_path' (save the result "
            "instead).",
        ),
        ("run_many", "bugdet", f"run_many: each option must be one of {REPLAY}, tools, clock, got 'bugdet'."),
        (
            "run_many",
            "trace_path",
            f"run_many: each option must be one of {REPLAY}, tools, clock, got 'trace_path' (it "
            "names one run's file; pass trace_dir= instead).",
        ),
    ],
)  # fmt: skip
def test_an_option_an_entry_point_does_not_take_is_named(
    where: str, option: str, message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        call(where, {option: None})
    assert str(caught.value) == message


def with_no_model(where: str) -> Any:
    if where == "resume":
        return resume(SAVED, None, tools=[])  # type: ignore[arg-type]
    if where == "run_many":
        return run_many(None, ["go"], progress=False)  # type: ignore[arg-type]
    return called(ENTRY[where], None, "go")


@pytest.mark.parametrize("where", ["start", "run", "astart", "arun", "resume", "run_many"])
def test_a_model_that_is_not_a_function_is_named(where: str) -> None:
    with pytest.raises(TypeError) as caught:
        with_no_model(where)
    assert str(caught.value) == (
        f"{where}: complete must be a function (messages, tools) -> Completion, got None."
    )


def test_fork_names_another_model_that_is_not_a_function() -> None:
    with pytest.raises(TypeError) as caught:
        start(MODEL, "go").fork(complete="gpt")  # type: ignore[typeddict-item]
    assert str(caught.value) == (
        "Session.fork: complete must be a function (messages, tools) -> Completion, got str."
    )


@pytest.mark.parametrize(
    ("where", "arguments", "error", "message"),
    [
        ("fork", {"at": 2}, ValueError, "Session.fork: at must be a step index from 0 to 1, got 2."),
        ("fork", {"at": "1"}, TypeError, "Session.fork: at must be a step index from 0 to 1 or None, got str."),
        ("fork", {"messages": "hi"}, TypeError, "Session.fork: messages must be a list of Message or None, got str."),
        ("fork", {"messages": [None]}, TypeError, "Session.fork: messages[0] must be a Message, got None."),
        ("resume", {"at": -1}, ValueError, "resume: at must be a step index from 0 to 1, got -1."),
        ("resume", {"at": 1.0}, TypeError, "resume: at must be a step index from 0 to 1 or None, got float."),
        ("resume", {"messages": (Message("user", "a"), "b")}, TypeError, "resume: messages[1] must be a Message, got str."),
    ],
)  # fmt: skip
def test_where_a_fork_starts_is_named_with_the_entry_point(
    where: str, arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    session = start(ScriptedModel(["ok"]), "go")
    session.run()  # one step, as SAVED has
    fork = session.fork if where == "fork" else lambda **a: resume(SAVED, MODEL, tools=[], **a)
    with pytest.raises(error) as caught:
        fork(**arguments)
    assert str(caught.value) == message


def test_resume_names_a_trace_of_the_wrong_type() -> None:
    with pytest.raises(TypeError) as caught:
        resume(None, MODEL, tools=[])  # type: ignore[arg-type]
    assert str(caught.value) == (
        "resume: trace must be a Result, a dict from Result.to_dict() or a path to a saved "
        "trace, got None."
    )


def test_a_cost_ceiling_without_a_price_names_both_missing() -> None:
    with pytest.raises(ValueError, match=r"^run: price and max_output_tokens must") as caught:
        run(ScriptedModel(["ok"]), "go", budget=Budget(max_cost_usd=1.0))
    assert str(caught.value) == (
        "run: price and max_output_tokens must be a Price and an int >= 1 with "
        "Budget(max_cost_usd=...), which projects each turn's worst case before it is sent, got "
        "None and None. Pass them here, or give the model callable those attributes. A price "
        "by model name: price='gpt-4o-mini', from genai-prices (pip install "
        "'budgetloop[prices]', with which the adapters price their model)."
    )


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        (None, "prompt must be a str or a list of Message, got None."),
        (3, "prompt must be a str or a list of Message, got int."),
        (b"go", "prompt must be a str or a list of Message, got bytes."),
        ({"role": "user"}, "prompt must be a str or a list of Message, got dict."),
        (["go"], "prompt[0] must be a Message, got str."),
    ],
)
@pytest.mark.parametrize("where", ["start", "run", "astart", "arun"])
def test_a_prompt_of_the_wrong_type_says_so(where: str, prompt: Any, message: str) -> None:
    with pytest.raises(TypeError) as caught:
        called(ENTRY[where], MODEL, prompt)
    assert str(caught.value) == f"{where}: {message}"


def test_a_session_made_directly_names_its_class() -> None:
    with pytest.raises(TypeError) as caught:
        Session(MODEL, "go", max_workers="2")  # type: ignore[typeddict-item]
    assert str(caught.value) == "Session: max_workers must be an int >= 1 or None, got str."
    with pytest.raises(TypeError) as caught:
        Session(MODEL, "go", where="run")  # type: ignore[call-arg]
    assert str(caught.value).startswith("Session: each option must be one of budget, price, ")
    assert str(caught.value).endswith(", tools, got 'where'.")


# -- the options are written once -----------------------------------------------------------------


def keywords(fn: Any) -> list[str]:
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY]


def test_the_options_are_one_list() -> None:
    start_options = list(option_names(StartOptions))
    for fn in (start, run, astart, arun):
        assert sorted(keywords(fn)) == sorted(start_options), fn
    assert list(OPTIONS) == start_options  # each declared once, with its check
    assert set(option_names(ForkOptions)) == {*start_options, "complete"}
    assert set(option_names(ResumeOptions)) == set(start_options) - {"tools"}
    assert set(option_names(ReplayOptions)) == set(start_options) - {
        "tools",
        "clock",
        "trace_path",
    }
    assert set(option_names(ManyOptions)) == set(start_options) - {"trace_path"}
    for fn, options in (
        (Session.fork, "ForkOptions"),
        (resume, "ResumeOptions"),
        (replay, "ReplayOptions"),
        (run_many, "ManyOptions"),
    ):
        assert inspect.signature(fn).parameters["options"].annotation == f"Unpack[{options}]"


def test_each_entry_point_shows_every_option_with_its_default() -> None:
    for fn in (start, run, astart, arun):
        params = inspect.signature(fn).parameters
        assert [p.name for p in params.values()][:2] == ["complete", "prompt"]
        assert {n: params[n].default for n in ("budget", "repeat_limit", "finish", "tools")} == {
            "budget": None,
            "repeat_limit": 3,
            "finish": False,
            "tools": (),
        }
        assert params["max_result_chars"].default == 100_000
        assert params["repeat_limit"].annotation == int | None


def test_a_ledger_option_is_a_ledger() -> None:
    assert get_args(StartOptions.__annotations__["ledger"])[0] == Ledger | None
    assert isinstance(MemoryLedger(1.0), Ledger)
    session = start(MODEL, "go", ledger=MemoryLedger(1.0))
    assert isinstance(session.options.values["ledger"], MemoryLedger)


# -- what a function given as an option returns ---------------------------------------------------


@pytest.mark.parametrize(
    ("returns", "error", "message"),
    [
        (
            -3,
            ValueError,
            "count_tokens: what count_tokens\\(messages, tools\\) returns must be an int >= 0",
        ),
        (
            2.5,
            TypeError,
            "count_tokens: what count_tokens\\(messages, tools\\) returns must be an int >= 0",
        ),
        (
            math.nan,
            TypeError,
            "count_tokens: what count_tokens\\(messages, tools\\) returns must be an int >= 0",
        ),
        (
            "12",
            TypeError,
            "count_tokens: what count_tokens\\(messages, tools\\) returns must be an int >= 0",
        ),
        (
            None,
            TypeError,
            "count_tokens: what count_tokens\\(messages, tools\\) returns must be an int >= 0",
        ),
    ],
)
def test_a_count_tokens_that_returns_no_count_fails_at_start(
    returns: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        start(MODEL, "go", count_tokens=lambda messages, tools: returns)


def test_a_redact_that_returns_no_text_fails_at_start() -> None:
    with pytest.raises(
        TypeError, match=r"^redact: what redact returns must be a str, got None\.$"
    ):
        start(MODEL, "go", redact=lambda text: None)


def test_a_clock_that_goes_backwards_fails_the_step_before_any_call() -> None:
    times = iter([10.0, 10.0, 5.0])  # read at start(), then at the step
    session = start(MODEL, "go", clock=lambda: next(times, 5.0))
    calls = MODEL.calls
    with pytest.raises(
        ValueError, match=r"^Session\.step: clock must be monotonic, got 10.0 then 5.0 "
    ):
        session.step()
    assert MODEL.calls == calls
    assert session.steps == ()


def test_a_message_that_is_not_text_fails_where_it_is_made() -> None:
    with pytest.raises(TypeError, match=r"Message: content must be str or None, got int"):
        Message("user", 3)  # type: ignore[arg-type]


BACKWARDS = (
    "clock must be monotonic, got 10.0 then 5.0 (backwards, or NaN); pass a monotonic clock "
    "such as time.monotonic."
)


@pytest.mark.parametrize(
    ("where", "take"),
    [
        ("run", lambda clock: run(MODEL, "go", clock=clock)),
        ("arun", lambda clock: asyncio.run(arun(MODEL, "go", clock=clock))),
        ("Session.run", lambda clock: start(MODEL, "go", clock=clock).run()),
        ("Session.step", lambda clock: start(MODEL, "go", clock=clock).step()),
        ("AsyncSession.run", lambda clock: asyncio.run(astart(MODEL, "go", clock=clock).run())),
        ("AsyncSession.step", lambda clock: asyncio.run(astart(MODEL, "go", clock=clock).step())),
    ],
)
def test_a_step_error_names_the_entry_point_the_user_called(
    where: str, take: Callable[[Callable[[], float]], Any]
) -> None:
    times = iter([10.0, 10.0, 5.0])  # read twice when the run starts, then at its first step
    with pytest.raises(ValueError, match=r"clock must be monotonic") as caught:
        take(lambda: next(times, 5.0))  # session.run() steps it, and is what the user called
    assert str(caught.value) == f"{where}: {BACKWARDS}"
