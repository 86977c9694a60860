"""The schema family: a tool from a function, and a model's arguments checked against it.

``_tool`` is ``@tool`` and ``Tool`` (the schema a function's hints and docstring give, and the
call that checks the model's arguments first); ``_hints`` reads the callable and its hints,
``_docstring`` its descriptions; ``_shapes`` turns a hint into a schema and a converter,
``_classes`` does it for dataclasses, ``TypedDict``s and pydantic models, ``_strict`` makes a
schema OpenAI's strict mode accepts, ``_field`` reads a pydantic ``Field`` given as a default.
``_check`` checks arguments against a schema (``_fit`` one value against one schema keyword at a
time) and ``_arg_error`` words what did not fit; ``_written`` makes a schema written elsewhere
(an MCP server's) one the check can read.
"""
