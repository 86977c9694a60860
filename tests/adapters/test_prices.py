"""budgetloop.prices over the real genai-prices catalog (offline: the data the package ships):
price_of checked against genai-prices' own calc_price for the same usage, names it does not know,
the adapters pricing their model, and price= as a model name in run, replay and budget_report."""

from __future__ import annotations

from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path

import anthropic
import genai_prices
import openai
import pytest

from budgetloop import (
    Budget,
    Price,
    ScriptedModel,
    Usage,
    budget_report,
    load_trace,
    replay,
    run,
)
from budgetloop.adapters import anthropic_messages, openai_chat, openai_responses
from budgetloop.prices import price_of
from tests.extras_support import printed_without
from tests.provider_server import Provider

VERSION = genai_prices.__version__
PEERS = Path(__file__).parents[1] / "fixtures" / "peer-traces"


def catalog(usage: Usage, model: str, provider: str, when: datetime | None = None) -> Decimal:
    """What genai-prices itself says the usage costs."""
    theirs = genai_prices.Usage(
        input_tokens=usage.input_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )
    calc = genai_prices.calc_price(
        theirs, model_ref=model, provider_id=provider, genai_request_timestamp=when
    )
    return calc.total_price


def ours(price: Price, usage: Usage) -> Decimal:
    return Decimal(price.usage_pico(usage)) / 10**12


def test_cached_input_is_priced_as_genai_prices_prices_it() -> None:
    price = price_of("gpt-4o-mini", "openai")
    assert price.source == f"genai-prices {VERSION}: openai gpt-4o-mini"
    for usage in (
        Usage(12_000, 800, cache_read_tokens=9_000),
        Usage(5_000, 40, cache_read_tokens=1_000, cache_write_tokens=2_000),
        Usage(1, 0),
    ):
        assert ours(price, usage) == catalog(usage, "gpt-4o-mini", "openai")
    assert ours(price, Usage(12_000, 800, cache_read_tokens=9_000)) == Decimal(
        "0.001605"
    )  # 3,000 x $0.15 + 9,000 x $0.075 + 800 x $0.60


def test_a_request_over_the_tier_is_priced_as_genai_prices_prices_it() -> None:
    price = price_of("claude-sonnet-4-5-20250929", "anthropic")
    assert price.source == f"genai-prices {VERSION}: anthropic claude-sonnet-4-5"
    assert price == Price(
        3.0,
        15.0,
        cache_read_per_mtok=0.3,
        cache_write_per_mtok=3.75,
        tiers={200_000: Price(6.0, 22.5, cache_read_per_mtok=0.6, cache_write_per_mtok=7.5)},
    )
    for usage in (
        Usage(200_000, 1_000, cache_read_tokens=150_000),  # at the threshold: the base rates
        Usage(200_001, 1_000, cache_read_tokens=150_000),  # above it: every token at the tier
        Usage(450_000, 4_000, cache_read_tokens=300_000, cache_write_tokens=100_000),
    ):
        assert ours(price, usage) == catalog(usage, "claude-sonnet-4-5", "anthropic")
    gemini = price_of("gemini-2.5-pro", "google")
    usage = Usage(250_000, 2_000, cache_read_tokens=50_000)
    assert ours(gemini, usage) == catalog(usage, "gemini-2.5-pro", "google")
    assert gemini.tier_above(250_000) == 200_000


def test_a_past_price_is_the_one_that_applied_on_that_date() -> None:
    then = price_of("o3", "openai", at=date(2025, 6, 1))
    now = price_of("o3", "openai")
    assert (then.input_per_mtok, then.output_per_mtok) == (10.0, 40.0)
    assert (now.input_per_mtok, now.output_per_mtok) == (2.0, 8.0)
    assert then.source == f"genai-prices {VERSION}: openai o3 at 2025-06-01"
    usage = Usage(30_000, 6_000, cache_read_tokens=10_000)
    june = datetime(2025, 6, 1, tzinfo=timezone.utc)
    assert ours(then, usage) == catalog(usage, "o3", "openai", june)
    assert ours(now, usage) == catalog(usage, "o3", "openai")
    # claude-sonnet-4-6 was tiered until 2026-03-13, flat since
    tiered = price_of("claude-sonnet-4-6", at=datetime(2026, 1, 1, 12, tzinfo=timezone.utc))
    big = Usage(300_000, 1_000)
    assert tiered.tiers is not None
    assert ours(tiered, big) == catalog(
        big, "claude-sonnet-4-6", "anthropic", datetime(2026, 1, 1, tzinfo=timezone.utc)
    )
    assert price_of("claude-sonnet-4-6").tiers is None


def test_a_name_the_catalog_does_not_know_names_the_closest_it_does() -> None:
    with pytest.raises(LookupError) as caught:
        price_of("gpt-4o-mimi", "openai")
    message = str(caught.value)
    assert message.startswith(
        "price_of: model must be one in genai-prices' catalog for provider 'openai', got "
        "'gpt-4o-mimi'; the closest names: gpt-4o-mini, "
    )
    with pytest.raises(
        LookupError,
        match=r"^price_of: provider must be one in genai-prices' catalog, got 'opneai'; the "
        r"closest: openai",  # then the others the catalog's version finds close
    ):
        price_of("gpt-4o", "opneai")
    with pytest.raises(TypeError, match=r"^price_of: model must be a non-empty str, got ''\.$"):
        price_of("")
    with pytest.raises(
        TypeError, match=r"^price_of: at must be a date, a datetime or None, got str\.$"
    ):
        price_of("gpt-4o", at="2025-01-01")  # type: ignore[arg-type]


def test_the_adapters_price_their_model_from_the_catalog_when_no_price_is_given() -> None:
    http = Provider("openai").client()
    oa = openai.OpenAI(api_key="sk-test", http_client=http)
    chat = openai_chat(oa, "gpt-4o-mini", max_tokens=100)
    assert chat.price == price_of("gpt-4o-mini", "openai")
    assert chat.price is not None
    assert chat.price.source == f"genai-prices {VERSION}: openai gpt-4o-mini"
    responses = openai_responses(oa, "o3", max_tokens=100)
    assert responses.price == price_of("o3", "openai")
    claude = anthropic.Anthropic(api_key="sk-test", http_client=Provider("anthropic").client())
    sonnet = anthropic_messages(claude, "claude-sonnet-4-5-20250929", max_tokens=100)
    assert sonnet.price is not None
    assert sonnet.price.tiers is not None
    # a price given wins; a model the catalog does not know is left without one
    assert openai_chat(oa, "gpt-4o-mini", max_tokens=100, price=Price(1, 2)).price == Price(1, 2)
    unknown = openai_chat(oa, "my-finetune-7", max_tokens=100)
    assert unknown.price is None
    with pytest.raises(ValueError, match=r"^run: price must be a Price with") as caught:
        run(unknown, "hi", budget=Budget(max_cost_usd=0.1))
    assert str(caught.value) == (
        "run: price must be a Price with Budget(max_cost_usd=...), which projects each turn's "
        "worst case before it is sent, got None. Pass it here, or give the model callable that "
        "attribute. A price by model name: price='gpt-4o-mini', from genai-prices (pip install "
        "'budgetloop[prices]', with which the adapters price their model)."
    )


def test_price_may_be_a_model_name_and_the_trace_keeps_its_source(tmp_path: Path) -> None:
    model = ScriptedModel(["done"], max_output_tokens=50)
    result = run(model, "hi", price="gpt-4o-mini", budget=Budget(max_cost_usd=0.01))
    assert result.price == price_of("gpt-4o-mini")
    assert result.price is not None
    assert result.price.source == f"genai-prices {VERSION}: openai gpt-4o-mini"
    assert result.to_dict()["price"]["source"] == result.price.source
    result.save(tmp_path / "run.json")
    assert load_trace(tmp_path / "run.json").price.source == result.price.source  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"^run: price must be a Price, or a model") as caught:
        run(model, "hi", price="gpt-4o-mimi")
    assert str(caught.value).startswith(
        "run: price must be a Price, or a model name genai-prices knows, got 'gpt-4o-mimi'. "
        "The closest names: gpt-4o-mini, "
    )
    with pytest.raises(
        TypeError, match=r"^run: price must be a Price, a model name or None, got float\.$"
    ):
        run(model, "hi", price=2.5)  # type: ignore[arg-type]


def test_replay_and_budget_report_price_an_imported_run_by_model_name() -> None:
    imported = load_trace(PEERS / "pydantic_ai_spans_otlp.json")
    assert imported.cost_usd is None
    priced = price_of("gpt-4o")
    again = replay(imported, price="gpt-4o", max_output_tokens=500)
    usages = [s.usage for s in imported.steps]
    assert again.cost_usd == pytest.approx(sum(priced.usage_cost(u) for u in usages if u))
    assert again.price is not None
    assert again.price.source == f"genai-prices {VERSION}: openai gpt-4o"

    unpriced = budget_report([imported])
    assert unpriced.unknown_cost == ("#0",)
    assert unpriced.prices == {"none": ("#0",)}
    report = budget_report([imported, again.to_dict()], price="gpt-4o")
    assert report.unknown_cost == ()
    assert report.total_cost_usd == pytest.approx(2 * again.cost_usd)
    assert report.prices == {f"genai-prices {VERSION}: openai gpt-4o": ("#0", "#1")}
    assert f"priced at:\n  genai-prices {VERSION}: openai gpt-4o: #0, #1\n" in str(report)
    given = budget_report([imported], price=Price(2.5, 10.0))
    assert given.prices == {"given: $2.5 in / $10 out a million tokens": ("#0",)}


def test_without_genai_prices_the_import_error_names_the_extra() -> None:
    code = (
        "from budgetloop.prices import price_of\n"
        "try:\n    price_of('gpt-4o')\nexcept ImportError as e:\n    print(e)\n"
    )
    assert printed_without("genai_prices", code) == (
        "price_of: genai-prices must be installed, got none; pip install 'budgetloop[prices]', "
        "or give the price yourself: Price(input_per_mtok, output_per_mtok)."
    )


# Usages below, at and far above the catalog's long-context thresholds, with every kind of token.
CATALOG_USAGES = (
    Usage(1_001, 77, cache_read_tokens=300, cache_write_tokens=200),
    Usage(1_200_003, 4_001, cache_read_tokens=500_001, cache_write_tokens=100_003),
)
# The catalog's rates a Price holds: a model priced by these alone is priced here as genai-prices
# prices it.
TOKEN_RATES = {"input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok"}
PICO = Decimal("1e-12")


def test_every_model_the_catalog_lists_is_priced_with_its_provider_given_or_not() -> None:
    from genai_prices.data_snapshot import get_snapshot

    snapshot = get_snapshot()
    when = datetime(2026, 6, 1, tzinfo=timezone.utc)
    on = f"at {when:%Y-%m-%d}"
    checked = 0
    for provider in snapshot.providers:
        for model in provider.models:
            price = price_of(model.id, provider.id, at=when)
            assert price.source == f"genai-prices {VERSION}: {provider.id} {model.id} {on}"
            rates = model.get_prices(when)
            if set(rates._comparable_values()) <= TOKEN_RATES:
                for usage in CATALOG_USAGES:
                    theirs = genai_prices.Usage(
                        input_tokens=usage.input_tokens,
                        cache_read_tokens=usage.cache_read_tokens,
                        cache_write_tokens=usage.cache_write_tokens,
                        output_tokens=usage.output_tokens,
                    )
                    over = ours(price, usage) - rates.calc_price(theirs)["total_price"]
                    # a rate finer than a picodollar a token (1/12 of a cent a million) is
                    # billed at the next whole picodollar a token: never a picodollar below
                    assert -PICO < over <= (usage.input_tokens + usage.output_tokens) * PICO
                checked += 1
            anywhere = price_of(model.id, at=when)  # the provider the catalog finds, or the first
            named = anywhere.source.removeprefix(f"genai-prices {VERSION}: ")
            where, found = named.removesuffix(f" {on}").split(" ", 1)
            assert found.lower() == model.id.lower() or anywhere == price_of(
                model.id, where, at=when
            )
    assert checked > 1_000


def test_a_catalog_id_its_own_rules_miss_is_found_and_never_offered_back() -> None:
    name = "regional.amazon.nova-2-lite-v1:0"  # the catalog's rules match only us., eu., jp.
    assert price_of(name, "aws").source == f"genai-prices {VERSION}: aws {name}"
    assert price_of(name).source == f"genai-prices {VERSION}: aws {name}"
    with pytest.raises(LookupError) as caught:
        price_of("regional.amazon.nova-2-lite-v9:0", "aws")
    assert isinstance(caught.value, LookupError)
    assert "regional.amazon.nova-2-lite-v1:0" in str(caught.value)
    assert "got 'regional.amazon.nova-2-lite-v9:0'; the closest names: " in str(caught.value)
    assert "nova-2-lite-v9" not in str(caught.value).split("the closest names: ")[1]
