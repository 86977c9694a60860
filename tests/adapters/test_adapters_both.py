"""What openai_chat and anthropic_messages do alike, each over its real SDK client served recorded
bodies through httpx's MockTransport: runs to an answer, to a cost stop and to a provider error,
async models, empty turns, and the examples without an API key. What differs between the two
providers is tested in test_adapters_openai.py and test_adapters_anthropic.py."""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import budgetloop
from budgetloop import Budget, Completion, Message
from budgetloop.adapters import AsyncChatModel
from tests.adapter_support import ANTHROPIC, CASES, OPENAI, Case
from tests.provider_server import Provider, payload

each_provider = pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])


def answered(case: Case) -> Provider:
    """A provider that answers the recorded run: a turn of two tool calls, then the final text."""
    return Provider(case.name, (200, payload(case.tool_turn)), (200, payload(case.final_turn)))


@each_provider
def test_an_async_run_through_the_adapter_answers(case: Case) -> None:
    provider = answered(case)
    model = case.adapter(
        case.async_client(provider), case.model, max_tokens=case.max_tokens, price=case.price
    )
    result = asyncio.run(
        budgetloop.arun(model, case.prompt, tools=list(case.tools), budget=Budget(max_cost_usd=1))
    )
    assert (result.stop, result.answer, len(provider.bodies)) == ("answered", case.answer, 2)
    assert result.cost_usd == case.cost(*case.usages)


@each_provider
def test_a_cost_ceiling_stops_the_run_after_an_exact_number_of_requests(case: Case) -> None:
    model = case.over(Provider(case.name))
    assert (model.price, model.max_output_tokens) == (case.price, case.max_tokens)
    session = budgetloop.start(model, case.prompt, system=case.system, tools=list(case.tools))
    first_turn = session.projection.cost_usd
    assert first_turn is not None

    # the first turn's worst case fits exactly (equality fits); after it, no turn to read the
    # results can
    provider = answered(case)
    result = case.run(case.over(provider), Budget(max_cost_usd=first_turn))
    assert result.stop == "max_cost_usd"
    assert len(provider.bodies) == 1
    assert result.cost_usd == case.cost(case.usages[0])

    provider = Provider(case.name, (200, payload(case.tool_turn)))
    result = case.run(case.over(provider), Budget(max_cost_usd=first_turn - 0.000001))
    assert result.stop == "max_cost_usd"
    assert provider.bodies == []

    # room for both turns' worst case: the run answers in two requests
    provider = answered(case)
    result = case.run(case.over(provider), Budget(max_cost_usd=1.0))
    assert (result.stop, len(provider.bodies)) == ("answered", 2)


@each_provider
def test_a_404_raises_the_sdk_error_and_ends_a_run_as_model_error(case: Case) -> None:
    provider = Provider(case.name, (404, payload(case.error_404)))
    with pytest.raises(case.sdk.NotFoundError) as raised:
        case.over(provider)([Message("user", "go")], [])
    assert (str(raised.value), raised.value.status_code) == (case.error_text(), 404)
    assert {name: getattr(raised.value, name) for name in case.error_fields} == case.error_fields

    provider = Provider(case.name, (404, payload(case.error_404)))
    result = case.run(case.over(provider))
    assert result.stop == "model_error"
    assert result.error == "NotFoundError: " + case.error_text()
    assert len(provider.bodies) == 1
    assert result.cost_usd == 0


@each_provider
def test_an_async_client_gives_an_awaitable_model(case: Case) -> None:
    provider = Provider(case.name, (200, payload(case.tool_turn)))
    model = case.adapter(case.async_client(provider), case.model, max_tokens=64, price=case.price)

    assert isinstance(model, AsyncChatModel)
    assert inspect.iscoroutinefunction(model.__call__)
    completion = asyncio.run(model([Message("system", "s"), Message("user", "go")], []))
    assert tuple(c.id for c in completion.tool_calls) == case.call_ids
    assert provider.bodies[0][case.max_tokens_field] == 64
    assert case.system_sent(provider.bodies[0]) == ["s"]
    assert (model.price, model.max_output_tokens) == (case.price, 64)


@each_provider
def test_an_async_404_raises_the_sdk_error(case: Case) -> None:
    provider = Provider(case.name, (404, payload(case.error_404)))
    model = case.adapter(case.async_client(provider), case.missing_model, max_tokens=64)
    with pytest.raises(case.sdk.NotFoundError) as raised:
        asyncio.run(model([Message("user", "go")], []))
    assert (str(raised.value), raised.value.status_code) == (case.error_text(), 404)


def no_openai_content(body: dict[str, Any]) -> None:
    body["choices"][0]["message"]["content"] = None


def empty_openai_content(body: dict[str, Any]) -> None:
    body["choices"][0]["message"]["content"] = ""


def no_anthropic_blocks(body: dict[str, Any]) -> None:
    body.update(content=[], stop_reason="refusal")


@pytest.mark.parametrize(
    ("case", "empty", "text", "finish"),
    [
        (OPENAI, no_openai_content, None, "stop"),
        (OPENAI, empty_openai_content, "", "stop"),
        (ANTHROPIC, no_anthropic_blocks, None, "content_filter"),  # a "refusal"
    ],
    ids=["openai-null-content", "openai-empty-content", "anthropic-no-blocks"],
)
def test_an_empty_turn_is_an_empty_answer(
    case: Case, empty: Callable[[dict[str, Any]], None], text: str | None, finish: str
) -> None:
    body = payload(case.final_turn)
    empty(body)
    completion = case.over(Provider(case.name, (200, body)))([Message("user", "go")], [])
    assert completion == Completion(
        text=text,
        usage=case.usages[1],
        model=body["model"],
        response_id=body["id"],
        finish_reason=finish,
    )

    result = case.run(case.over(Provider(case.name, (200, body))))
    assert (result.stop, result.answer) == ("answered", "")


@each_provider
def test_the_example_exits_with_a_clear_message_without_a_key(case: Case) -> None:
    env = {k: v for k, v in os.environ.items() if k != case.key_variable}
    example = Path(__file__).parents[2] / case.example
    done = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == case.no_key_message


# A usage each provider's server might send that says no count the adapter can bill by.
UNREADABLE = {
    "openai": [
        {},
        {"prompt_tokens": "133", "completion_tokens": 19},
        {"prompt_tokens": 133.0, "completion_tokens": 19},
        {
            "prompt_tokens": 133,
            "completion_tokens": 19,
            "prompt_tokens_details": {"cached_tokens": 500},
        },
    ],
    "anthropic": [
        {},
        {"input_tokens": "798", "output_tokens": 50},
        {"input_tokens": 798, "output_tokens": 50.0},
        {"input_tokens": 798, "output_tokens": -50},
    ],
}


@each_provider
@pytest.mark.parametrize("which", range(4))
def test_a_usage_that_cannot_be_read_is_billed_at_the_worst_case_and_the_run_goes_on(
    case: Case, which: int
) -> None:
    body = payload(case.final_turn)
    body["usage"] = UNREADABLE[case.name][which]
    result = case.run(case.over(Provider(case.name, (200, body))), Budget(max_cost_usd=1))

    assert result.stop == "answered"
    assert result.answer == case.answer
    step = result.steps[0]
    assert step.usage is None  # charged at the projection, as a call that reported no usage
    assert step.projection is not None
    assert result.cost_usd == step.projection.cost_usd > case.cost(case.usages[1])


def test_openai_chat_reads_a_usage_in_the_responses_api_words() -> None:
    body = payload(OPENAI.final_turn)
    body["usage"] = {"input_tokens": 133, "output_tokens": 19, "total_tokens": 152}
    result = OPENAI.run(OPENAI.over(Provider("openai", (200, body))))

    assert result.steps[0].usage == OPENAI.usages[1]
    assert result.cost_usd == OPENAI.cost(OPENAI.usages[1])


# -- the request: the figure the turn was projected at, the run's settings --------------------


@each_provider
def test_a_request_asks_for_the_output_tokens_its_turn_was_projected_at(case: Case) -> None:
    provider = answered(case)
    result = budgetloop.run(
        case.over(provider), case.prompt, tools=list(case.tools), max_output_tokens=100
    )
    assert result.stop == "answered"
    assert [body[case.max_tokens_field] for body in provider.bodies] == [100, 100]
    assert [result.request(i).max_output_tokens for i in range(2)] == [100, 100]


SETTINGS = {"temperature": 0.2, "top_p": 0.9, "stop": "END", "tool_choice": "required",
            "parallel_tool_calls": False}  # fmt: skip
SENT = {
    "openai": {"temperature": 0.2, "top_p": 0.9, "stop": "END", "tool_choice": "required",
               "parallel_tool_calls": False, "seed": 7, "logit_bias": {"50256": -100}},
    "anthropic": {"temperature": 0.2, "top_p": 0.9, "stop_sequences": ["END"], "top_k": 5,
                  "tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
}  # fmt: skip
OWN = {"openai": {"seed": 7, "openai": {"logit_bias": {"50256": -100}}},
       "anthropic": {"anthropic": {"top_k": 5}, "openai": {"logit_bias": {"1": 1}}}}  # fmt: skip


@each_provider
def test_settings_reach_every_request_in_the_providers_words(case: Case) -> None:
    provider = answered(case)
    settings = {**SETTINGS, **OWN[case.name]}
    result = budgetloop.run(
        case.over(provider), case.prompt, tools=list(case.tools), settings=settings
    )
    assert result.stop == "answered"
    for body in provider.bodies:
        assert {key: body.get(key) for key in SENT[case.name]} == SENT[case.name]
    assert result.options["settings"] == settings
    assert budgetloop.Result.from_dict(result.to_dict()).request(1).settings == settings


@each_provider
def test_a_final_answer_request_has_no_tool_settings(case: Case) -> None:
    provider = Provider(case.name, (200, payload(case.final_turn)))
    budgetloop.run(case.over(provider), case.prompt, settings=SETTINGS)  # no tools
    (body,) = provider.bodies
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body
    assert body["temperature"] == 0.2


def test_a_setting_the_adapter_does_not_know_is_refused_before_anything_is_sent() -> None:
    provider = Provider("anthropic")
    with pytest.raises(ValueError, match="must be") as caught:
        budgetloop.run(ANTHROPIC.over(provider), "go", settings={"seed": 7})
    assert str(caught.value) == (
        "run: settings must be keys anthropic_messages knows (temperature, top_p, stop, "
        "tool_choice, parallel_tool_calls, anthropic, openai), got 'seed'."
    )
    with pytest.raises(ValueError, match="must be") as caught:
        budgetloop.run(OPENAI.over(provider), "go", settings={"openai": {"model": "gpt-5"}})
    assert str(caught.value) == (
        "run: settings['openai'] must be keys openai_chat does not set itself, got model."
    )
    assert provider.bodies == []


@each_provider
def test_a_turn_that_does_not_fit_asks_for_what_the_budget_has_left(case: Case) -> None:
    session = budgetloop.start(case.over(Provider(case.name)), case.prompt, system=case.system,
                               tools=list(case.tools))  # fmt: skip
    tokens = session.projection.input_tokens
    ceiling = case.price.cost(tokens, 100)  # room for 100 output tokens, not max_tokens
    provider = answered(case)
    result = budgetloop.run(
        case.over(provider), case.prompt, system=case.system, tools=list(case.tools),
        budget=Budget(max_cost_usd=ceiling), min_output_tokens=50,
    )  # fmt: skip
    assert provider.bodies[0][case.max_tokens_field] == 100
    first = result.steps[0].projection
    assert first is not None
    assert (first.output_tokens, first.fitted_from) == (100, case.max_tokens)
    assert first.fitted_text == (
        f"asked for 100 of {case.max_tokens} output tokens: what the budget had left"
    )
    # nothing is left for a turn of 50 to read the results: they are skipped, nothing more sent
    assert (result.stop, len(provider.bodies)) == ("max_cost_usd", 1)
    assert first.total_usd == ceiling  # the worst case asked for fits exactly
    # without min_output_tokens, the same ceiling sends nothing
    provider = answered(case)
    stopped = case.run(case.over(provider), Budget(max_cost_usd=ceiling))
    assert (stopped.stop, provider.bodies) == ("max_cost_usd", [])
