"""Helpers for the schema tests: every tool they make has its schema checked as JSON Schema
(Draft 2020-12), and its arguments run through the check and the conversion as the loop runs
them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonschema

from budgetloop import Tool, tool
from budgetloop._check import check_arguments

VALIDATOR = jsonschema.Draft202012Validator


def made(fn: Callable[..., Any], **options: Any) -> Tool:
    """``tool(fn, **options)``, its parameters' schema checked as a Draft 2020-12 schema."""
    t = tool(fn, **options)
    VALIDATOR.check_schema(t.schema["parameters"])
    return t


def properties(t: Tool) -> dict[str, Any]:
    return t.schema["parameters"]["properties"]  # type: ignore[no-any-return]


def received(t: Tool, arguments: Any) -> dict[str, Any]:
    """What the function is called with for these arguments: checked, then converted. The
    checked arguments must validate against the tool's schema (jsonschema agreeing)."""
    choices: dict[str, int] = {}
    checked, _ = check_arguments(t, arguments, choices)
    VALIDATOR(t.schema["parameters"]).validate(checked)
    return t.arguments_for(checked, choices)
