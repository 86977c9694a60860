"""What a replay of an imported run needs that its source may not hold: a schema for each tool.

openai-agents' export names its tools but keeps no schema, and a message log keeps neither; a
replay still has to offer the model call each tool and check the recorded arguments against
something. A tool the source gave no usable schema for is replayed with a stand-in: named after
it, taking every argument the recorded calls passed, each unchecked (a schema of ``{}``). It
exists only in the replay; the imported trace keeps what the source held.
"""

from __future__ import annotations

import json
from typing import Any

from .._trace._result import Result


def _usable(schema: Any) -> bool:
    parameters = schema.get("parameters") if isinstance(schema, dict) else None
    return (
        isinstance(schema, dict)
        and isinstance(schema.get("name"), str)
        and isinstance(parameters, dict)
        and isinstance(parameters.get("properties"), dict)
        and isinstance(parameters.get("required", []), list)
    )


def _keys(raw: Any) -> list[str]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):
            return []
    return [k for k in raw if isinstance(k, str)] if isinstance(raw, dict) else []


def replay_schemas(result: Result) -> tuple[dict[str, Any], ...]:
    """The schemas a replay offers: the recorded ones, and for an imported run a stand-in for
    each called tool its source has no usable schema for (see the module's text)."""
    if result.imported is None:
        return result.tools
    kept = [s for s in result.tools if _usable(s)]
    known = {s["name"] for s in kept}
    seen: dict[str, dict[str, None]] = {}
    for step in result.steps:
        for call in step.tool_calls:
            if isinstance(call.name, str) and call.name and call.name not in known:
                seen.setdefault(call.name, {}).update(dict.fromkeys(_keys(call.raw_arguments)))
    stand_ins = [
        {
            "name": name,
            "description": "",
            "parameters": {"type": "object", "properties": {k: {} for k in keys}},
        }
        for name, keys in seen.items()
    ]
    return (*kept, *stand_ins)
