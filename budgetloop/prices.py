"""Prices by model name, from genai-prices (pydantic's maintained catalog of model prices):
``pip install 'budgetloop[prices]'``.

``price_of("gpt-4o-mini")`` is the ``Price`` the catalog gives for the model today, with its
cache read and write prices and its long-context tiers; ``at=`` a date gives the price that
applied then. Nothing is fetched: the catalog is the one the installed package ships (or the one
your process gave genai-prices itself, with its ``UpdatePrices``). The price's ``source`` names
the catalog, the provider and the model, and is kept in the trace.
"""

from __future__ import annotations

import difflib
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

from ._engine._types import Price

__all__ = ["price_of"]

# The catalog's price keys that a Price holds; others (audio, images, one-hour cache writes,
# fees per request or per search) have no place in it and are left out.
_KEYS = {
    "input_per_mtok": "input_mtok",
    "output_per_mtok": "output_mtok",
    "cache_read_per_mtok": "cache_read_mtok",
    "cache_write_per_mtok": "cache_write_mtok",
}


def price_of(
    model: str, provider: str | None = None, *, at: date | datetime | None = None
) -> Price:
    """The ``Price`` of ``model`` (a name as sent to the API: ``"gpt-4o-mini"``,
    ``"claude-sonnet-4-5-20250929"``) in genai-prices' catalog, at the provider's rates on the
    date ``at`` (today when None; a ``date`` is that day, UTC). ``provider`` is the catalog's
    provider id (``"openai"``, ``"anthropic"``, ``"google"``...); None lets the catalog find the
    provider from the name. Every model id the catalog lists is found, with or without its
    provider, even where the catalog's own matching misses it; with no provider, a name the
    catalog cannot place is the model of the first provider that lists it as an id (the
    price's ``source`` says which).

    A name the catalog does not know is a ``LookupError`` naming the closest names it knows. A
    model with no input or output price in the catalog is priced at 0 for it, as the catalog
    means; prices of other units (audio, one-hour cache writes, fees per request) are left out.
    """
    if not isinstance(model, str) or not model:
        raise TypeError(f"price_of: model must be a non-empty str, got {model!r}.")
    if provider is not None and not isinstance(provider, str):
        raise TypeError(
            f"price_of: provider must be a str or None, got {type(provider).__name__}."
        )
    when = _moment(at)
    try:
        import genai_prices
        from genai_prices.data_snapshot import get_snapshot
    except ImportError:
        raise ImportError(
            "price_of: genai-prices must be installed, got none; pip install "
            "'budgetloop[prices]', or give the price yourself: Price(input_per_mtok, "
            "output_per_mtok)."
        ) from None
    snapshot = get_snapshot()
    where, info = _find(snapshot, model, provider)
    rates = info.get_prices(when)
    source = f"genai-prices {genai_prices.__version__}: {where.id} {info.id}"
    if snapshot.from_auto_update:
        source += f" (catalog updated {snapshot.timestamp:%Y-%m-%d})"
    if at is not None:
        source += f" at {when:%Y-%m-%d}"
    return _price(rates, source)


def _moment(at: date | datetime | None) -> datetime:
    if at is None:
        return datetime.now(tz=timezone.utc)
    if isinstance(at, datetime):
        return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)
    if isinstance(at, date):
        return datetime(at.year, at.month, at.day, tzinfo=timezone.utc)
    raise TypeError(f"price_of: at must be a date, a datetime or None, got {type(at).__name__}.")


def _find(snapshot: Any, model: str, provider: str | None) -> tuple[Any, Any]:
    """The catalog's provider and model for the name, or a LookupError naming the closest."""
    try:
        where, info = snapshot.find_provider_model(model, None, provider, None)
        return where, info
    except LookupError:
        pass
    providers = list(snapshot.providers)
    if provider is not None:
        by_id = {p.id.lower(): p for p in providers}
        if provider.lower() not in by_id:
            close = _closest(provider, list(by_id), 3)
            raise _Unknown(
                "price_of: provider must be one in genai-prices' catalog, got "
                f"{provider!r}; the closest: {_names(close)}.",
                close,
            ) from None
        providers = [by_id[provider.lower()]]
    listed = _listed(providers, model)
    if listed is not None:
        return listed
    known = sorted({m.id for p in providers for m in p.models})
    close = _closest(model, known, 5)
    within = "" if provider is None else f" for provider {provider!r}"
    raise _Unknown(
        f"price_of: model must be one in genai-prices' catalog{within}, got {model!r}; the "
        f"closest names: {_names(close)}.",
        close,
    ) from None


def _listed(providers: list[Any], model: str) -> tuple[Any, Any] | None:
    """The first of these providers' models whose catalog id is the name (as written, else in
    any case, as the catalog's own lookup reads names), where the catalog's matching rules miss
    it: some entries' rules do not match their own id."""
    found = [(w, i) for w in providers for i in w.models if i.id.lower() == model.lower()]
    exact = [(w, i) for w, i in found if i.id == model]
    return (exact or found)[0] if found else None


def _closest(name: str, known: list[str], n: int) -> list[str]:
    """The names in ``known`` closest to ``name``, never ``name`` itself (in any case)."""
    others = [k for k in known if k.lower() != name.lower()]
    return difflib.get_close_matches(name.lower(), others, n=n, cutoff=0.5)


class _Unknown(LookupError):
    """A name the catalog does not know, with the closest names it does."""

    def __init__(self, message: str, closest: list[str]) -> None:
        super().__init__(message)
        self.closest = closest


def _names(names: list[str]) -> str:
    return ", ".join(names) if names else "none"


def _price(rates: Any, source: str) -> Price:
    """A Price from the catalog's rates: each key's base rate, and a tier at every threshold
    where any of them changes, with each key's rate above it."""
    values: dict[str, Any] = {name: getattr(rates, key, None) for name, key in _KEYS.items()}
    starts = sorted({t.start for v in values.values() if _tiered(v) for t in v.tiers})
    tiers = {
        start: Price(**_rates({name: _at(v, start + 1) for name, v in values.items()}))
        for start in starts
    }
    base = _rates({name: _base(v) for name, v in values.items()})
    return Price(**base, tiers=tiers or None, source=source)


def _tiered(value: Any) -> bool:
    return value is not None and not isinstance(value, Decimal) and hasattr(value, "tiers")


def _base(value: Any) -> Any:
    return value.base if _tiered(value) else value


def _at(value: Any, input_tokens: int) -> Any:
    """A key's rate for a request of this whole input: the catalog's highest tier below it."""
    if not _tiered(value):
        return value
    rate = value.base
    for tier in value.tiers:
        if input_tokens > tier.start:
            rate = tier.price
    return rate


def _rates(values: dict[str, Decimal | None]) -> dict[str, Any]:
    """Price's keyword arguments: input and output 0 when the catalog has none, cache prices
    None (the input price) when it has none."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            out[name] = 0.0 if name in ("input_per_mtok", "output_per_mtok") else None
        else:
            out[name] = float(value)
    return out
