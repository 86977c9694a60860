"""One value checked against a JSON Schema of the kind ``@tool`` writes (or a pydantic model
does): ``type``, ``enum``/``const``, ``anyOf``/``oneOf``/``allOf``, ``$ref`` into the tool's
``$defs``, ``properties``/``required``/``additionalProperties``, ``items``/``prefixItems``,
the length and range keywords, ``uniqueItems``, ``pattern`` and ``multipleOf``. Keywords that
only describe (``description``, ``title``, ``default``, ``format``) are not checked.

A ``Fit`` carries what one check needs: the ``$defs``, the list the coerced paths go to (None:
nothing is coerced, the value must fit as sent), ``exact`` (a default: not even an integral
float passes as an integer) and the union branches chosen, by path.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from fractions import Fraction
from typing import Any

from ._arg_error import ArgumentError, Name, Part, Shown, json_kind

_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_COMBINED = ("$ref", "anyOf", "oneOf", "allOf")
_ANNOTATIONS = frozenset(["type", "description", "default", "title"])
_EXACT = {"string": str, "boolean": bool, "integer": int}  # a value of this type fits as it is
_PY = {"string": str, "boolean": bool, "array": list, "object": dict}
_BOUNDS = (
    ("minimum", operator.ge, ">="),
    ("exclusiveMinimum", operator.gt, ">"),
    ("maximum", operator.le, "<="),
    ("exclusiveMaximum", operator.lt, "<"),
)
# Schemas entered at once ($ref hops and nesting together), kept well inside Python's recursion
# limit: a value nested deeper is refused, and a schema referring to itself endlessly ends.
MAX_DEPTH = 120


class TooDeep(ArgumentError):
    """A value nested past ``MAX_DEPTH``: said as it is, not as a union branch that failed."""


class Fit:
    __slots__ = ("choices", "coerced", "defs", "depth", "exact", "failed")

    def __init__(
        self,
        defs: dict[str, Any] | None,
        coerced: list[str] | None,
        exact: bool = False,
        choices: dict[str, int] | None = None,
    ) -> None:
        self.defs = defs or {}
        self.coerced = coerced
        self.exact = exact
        self.choices = choices
        self.depth = 0
        # The union branches a value already failed, with why: checking a value against the
        # same branch at the same place again would fail again, and retrying it is what makes
        # nested unions exponential (A | B, each holding an A | B, a value failing deep down).
        self.failed: dict[tuple[int, int, str, bool], ArgumentError] = {}

    def _sub(self, coerced: list[str] | None) -> Fit:
        """A check of one union branch: the same ``$defs``, choices and known failures."""
        sub = Fit(self.defs, coerced, self.exact, self.choices)
        sub.depth = self.depth
        sub.failed = self.failed
        return sub

    def check(self, schema: dict[str, Any], value: Any, path: str) -> Any:
        """``value`` as it fits ``schema``: numbers normalized (and coerced when allowed)."""
        if not schema:
            return value
        if schema.keys() <= _ANNOTATIONS:  # the usual parameter: a type, maybe described
            kind = schema.get("type")
            exact = _EXACT.get(kind) if type(kind) is str else None
            if exact is not None and type(value) is exact:
                return value
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise TooDeep(Name(path), ": nested too deeply to check")  # the model reads this
            for key in _COMBINED:
                if key in schema:
                    value = self._combined(key, schema[key], value, path)
            return self._plain(schema, value, path)
        finally:
            self.depth -= 1

    # -- keywords that combine schemas ----------------------------------------------------------

    def _combined(self, key: str, sub: Any, value: Any, path: str) -> Any:
        if key == "$ref":
            return self.check(self._target(sub, path), value, path)
        if key == "allOf":
            for schema in sub:
                value = self.check(schema, value, path)
            return value
        return self._union(sub, value, path)  # anyOf; oneOf is checked the same way

    def _target(self, ref: Any, path: str) -> dict[str, Any]:
        local = isinstance(ref, str) and ref.startswith("#/$defs/")
        found = self.defs.get(ref[len("#/$defs/") :]) if local else None
        if not isinstance(found, dict):
            raise ArgumentError(  # the model reads this
                Name(path), ": the schema refers to ", Name(ref, quoted=True), ", which it lacks"
            )
        return found

    def _union(self, branches: list[dict[str, Any]], value: Any, path: str) -> Any:
        """The first branch the value fits as sent; if none, the first it fits once a number
        written as a string is read as one (when coercion is allowed at all)."""
        errors: list[ArgumentError] = []
        exact = self._sub(None)
        for i, branch in enumerate(branches):
            try:
                out = exact._attempt(branch, value, path)
            except TooDeep:
                raise
            except ArgumentError as exc:
                errors.append(exc)
                continue
            return self._chose(path, i, out)
        if self.coerced is not None:
            for i, branch in enumerate(branches):
                coerced: list[str] = []
                try:
                    out = self._sub(coerced)._attempt(branch, value, path)
                except TooDeep:
                    raise
                except ArgumentError:
                    continue
                self.coerced.extend(coerced)
                return self._chose(path, i, out)
        raise union_error(path, branches, errors, value, self.defs)  # the model reads this

    def _attempt(self, branch: dict[str, Any], value: Any, path: str) -> Any:
        key = (id(branch), id(value), path, self.coerced is None)
        known = self.failed.get(key)
        if known is not None:
            raise known
        try:
            return self.check(branch, value, path)
        except ArgumentError as exc:
            self.failed[key] = exc
            raise

    def _chose(self, path: str, index: int, value: Any) -> Any:
        if self.choices is not None:
            self.choices[path] = index
        return value

    # -- one schema's own keywords ----------------------------------------------------------------

    def _plain(self, schema: dict[str, Any], value: Any, path: str) -> Any:
        if "enum" in schema or "const" in schema:
            options = schema["enum"] if "enum" in schema else [schema["const"]]
            if not any(value == o and type(value) is type(o) for o in options):
                listed: list[Part] = []
                for i, option in enumerate(options):
                    listed += [", "] * (i > 0) + [Shown(option, cut=False)]
                raise ArgumentError(  # the model reads this
                    Name(path), ": expected one of ", *listed, ", got ", Shown(value)
                )
        kind = schema.get("type")
        if kind is not None:
            value = self._typed(kind, value, path)
        if isinstance(value, str):
            if "minLength" in schema or "maxLength" in schema or "pattern" in schema:
                _string(schema, value, path)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            _bounds(schema, value, path)
        elif isinstance(value, list):
            value = self._array(schema, value, path)
        elif isinstance(value, dict):
            value = self._object(schema, value, path)
        return value

    def _typed(self, kind: Any, value: Any, path: str) -> Any:
        kinds = kind if isinstance(kind, list) else [kind]
        for k in kinds:
            if k == "null":
                if value is None:
                    return None
            elif k in ("integer", "number"):
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return self._number(k, value, path)
            elif isinstance(value, _PY.get(k, ())):
                return value
        numeric = [k for k in kinds if k in ("integer", "number")]
        if numeric and isinstance(value, str) and self.coerced is not None:
            return self._written(numeric[0], value, path)
        expected = " or ".join(k for k in kinds if k != "null") or "null"
        # the model reads this
        raise ArgumentError(Name(path), f": expected {expected}, got {json_kind(value, True)}")

    def _number(self, kind: str, value: Any, path: str) -> Any:
        if kind == "number":
            try:
                number = float(value)
            except OverflowError:
                number = math.inf
            if not math.isfinite(number):
                # the model reads this
                raise ArgumentError(Name(path), ": expected a finite number, got ", Shown(value))
            return number
        if isinstance(value, float):
            if not value.is_integer():
                # the model reads this
                raise ArgumentError(Name(path), ": expected integer, got ", Shown(value))
            if self.exact:
                # the model reads this
                raise ArgumentError(Name(path), ": expected integer, got float")
            return int(value)
        return value

    def _written(self, kind: str, value: str, path: str) -> Any:
        """A number written as a string, read as one: the one coercion."""
        if not (_INT if kind == "integer" else _NUMBER).fullmatch(value):
            raise ArgumentError(Name(path), f": expected {kind}, got str")  # the model reads this
        try:
            number = int(value) if kind == "integer" else float(value)
        except ValueError:  # more digits than Python will parse
            raise ArgumentError(  # the model reads this
                Name(path), f": expected {kind}, got a {len(value)}-digit string"
            ) from None
        assert self.coerced is not None
        self.coerced.append(path)
        return self._number(kind, number, path)

    def _array(self, schema: dict[str, Any], value: list[Any], path: str) -> list[Any]:
        prefix = schema.get("prefixItems", ())
        items = schema.get("items")
        if not prefix and not isinstance(items, dict) and items is not False:
            out = value
        else:
            out = []
            for i, item in enumerate(value):
                sub = prefix[i] if i < len(prefix) else items
                if sub is False:
                    raise ArgumentError(  # the model reads this
                        Name(path), f": expected at most {len(prefix)} items, got {len(value)}"
                    )
                out.append(
                    item if not isinstance(sub, dict) else self.check(sub, item, f"{path}[{i}]")
                )
        least, most = schema.get("minItems"), schema.get("maxItems")
        if (least is not None and len(out) < least) or (most is not None and len(out) > most):
            raise ArgumentError(  # the model reads this
                Name(path), f": expected {_count(least, most, 'items')}, got {len(out)}"
            )
        if schema.get("uniqueItems"):
            seen: dict[Any, int] = {}
            for i, item in enumerate(out):
                first = seen.setdefault(_identity(item), i)
                if first != i:
                    raise ArgumentError(  # the model reads this
                        Name(path), f": expected unique items, got item {i} equal to item "
                        f"{first} (", Shown(item), ")",
                    )  # fmt: skip
        return out

    def _object(self, schema: dict[str, Any], value: dict[str, Any], path: str) -> dict[str, Any]:
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        if extra is False:
            for key in value:
                if key not in properties:
                    expected: Part = Name(", ".join(properties)) if properties else "no fields"
                    raise ArgumentError(  # the model reads this
                        Name(f"{path}.{key}"), ": unknown field; expected ", expected
                    )
        for key in schema.get("required", ()):
            if key not in value:
                # the model reads this
                raise ArgumentError(Name(f"{path}.{key}"), ": missing required field")
        if not properties and not isinstance(extra, dict):
            out = value
        else:
            out = {}
            for key, item in value.items():
                sub = properties.get(key, extra)
                out[key] = (
                    self.check(sub, item, f"{path}.{key}") if isinstance(sub, dict) else item
                )
        least, most = schema.get("minProperties"), schema.get("maxProperties")
        if (least is not None and len(out) < least) or (most is not None and len(out) > most):
            raise ArgumentError(  # the model reads this
                Name(path), f": expected {_count(least, most, 'fields')}, got {len(out)}"
            )
        return out


def _count(least: int | None, most: int | None, what: str) -> str:
    if least == most:
        return f"{least} {what}"
    if most is None:
        return f"at least {least} {what}"
    if least is None or least == 0:
        return f"at most {most} {what}"
    return f"{least} to {most} {what}"


def _string(schema: dict[str, Any], value: str, path: str) -> None:
    least, most = schema.get("minLength"), schema.get("maxLength")
    if (least is not None and len(value) < least) or (most is not None and len(value) > most):
        raise ArgumentError(  # the model reads this
            Name(path), f": expected {_count(least, most, 'characters')}, got {len(value)}"
        )
    pattern = schema.get("pattern")
    if pattern is not None and not _compiled(pattern).search(value):
        raise ArgumentError(  # the model reads this
            Name(path), ": expected a string matching ", Name(pattern), ", got ", Shown(value)
        )


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    """A JSON Schema ``pattern`` for Python's ``re``. Its ``$`` means what ECMA-262 says: the
    end of the string, never before a last newline as Python's does; so each ``$`` outside a
    character class is written ``\\Z``."""
    return re.compile(ecma_ends(pattern))


def ecma_ends(pattern: str) -> str:
    """``pattern`` with each ``$`` that ends the input (not escaped, not in ``[...]``) as
    ``\\Z``."""
    out: list[str] = []
    escaped = in_class = False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "$":
            out.append("\\Z")
            continue
        out.append(ch)
    return "".join(out)


def _bounds(schema: dict[str, Any], value: float, path: str) -> None:
    for key, holds, words in _BOUNDS:
        bound = schema.get(key)
        if bound is not None and not holds(value, bound):
            raise ArgumentError(  # the model reads this
                Name(path), f": expected a number {words} {bound!r}, got ", Shown(value)
            )
    step = schema.get("multipleOf")
    if step is not None and not _multiple(value, step):
        # the model reads this
        raise ArgumentError(Name(path), f": expected a multiple of {step!r}, got ", Shown(value))


def _multiple(value: float, step: float) -> bool:
    """As jsonschema decides it: by the float quotient for a float step (exactly, with
    fractions, where that overflows), else by the remainder."""
    if isinstance(step, float):
        try:
            quotient = value / step
            return int(quotient) == quotient
        except OverflowError:
            return (Fraction(value) / Fraction(step)).denominator == 1
    return not value % step


def _identity(value: Any) -> Any:
    """A key equal for values JSON Schema calls equal (1 and 1.0; not 1 and true)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_identity(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _identity(v)) for k, v in value.items()))
    return (type(value).__name__, value)


# -- the error of a union no branch of which fits -----------------------------------------------


def describe(schema: dict[str, Any], defs: dict[str, Any]) -> list[Part]:
    """A schema in a few words: ``integer``, ``one of "a", "b"``, ``Point``."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return [Name(ref.rsplit("/", 1)[-1])]
    if "enum" in schema or "const" in schema:
        options = schema["enum"] if "enum" in schema else [schema["const"]]
        parts: list[Part] = ["one of "] if len(options) > 1 else []
        for i, option in enumerate(options):
            parts += [", "] * (i > 0) + [Shown(option, cut=False)]
        return parts
    if isinstance(schema.get("title"), str) and "properties" in schema:
        return [Name(schema["title"])]
    kind = schema.get("type")
    if isinstance(kind, list):
        return [" or ".join(kind)]
    if isinstance(kind, str):
        return [kind]
    if "anyOf" in schema or "oneOf" in schema:
        inner: list[Part] = []
        for i, branch in enumerate(schema.get("anyOf") or schema.get("oneOf") or ()):
            inner += [" or "] * (i > 0) + describe(branch, defs)
        return inner
    return ["any value"]


def union_error(
    path: str,
    branches: list[dict[str, Any]],
    errors: list[ArgumentError],
    value: Any,
    defs: dict[str, Any],
) -> ArgumentError:
    """``f.x: expected integer or string, got bool``, and after it, in brackets, each branch
    whose own error says more than that: ``(as Point: f.x.y: missing required field)``."""
    real = [(b, e) for b, e in zip(branches, errors, strict=True) if b != {"type": "null"}]
    if len(real) == 1 and len(branches) == 2:  # T | None: the error of T, as it always was
        return real[0][1]
    parts: list[Part] = [Name(path), ": expected "]
    for i, branch in enumerate(branches):
        parts += [" or "] * (i > 0) + describe(branch, defs)
    parts.append(f", got {json_kind(value, True)}")
    more: list[Part] = []
    for branch, error in real:
        mismatch = (
            error.parts[0] == Name(path)
            and len(error.parts) == 2
            and str(error.parts[1]).startswith(": expected ")
        )
        if not mismatch:  # a union inside says only its first line: the words stay linear
            inner = getattr(error, "headline", error.parts)
            more += ["; "] * bool(more) + ["as ", *describe(branch, defs), ": ", *inner]
    out = ArgumentError(*parts, *([" (", *more, ")"] if more else []))
    out.headline = tuple(parts)  # type: ignore[attr-defined]
    return out
