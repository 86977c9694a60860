"""Starts Arize Phoenix (``phoenix serve``) with its OTLP/gRPC receiver bound to loopback.

Run by the Python of the venv Phoenix is installed in (``.venv-phoenix``), not the project's:
Phoenix binds its gRPC receiver to every interface (``[::]``) and has no setting for the host,
so the server it makes is told to bind 127.0.0.1 instead. Everything else comes from the
``PHOENIX_*`` environment variables that tests/adapters/test_phoenix.py sets.
"""

import sys

import grpc.aio

_make_server = grpc.aio.server


def _loopback_server(*args, **kwargs):  # type: ignore[no-untyped-def]
    server = _make_server(*args, **kwargs)
    add = server.add_insecure_port
    server.add_insecure_port = lambda address: add(address.replace("[::]", "127.0.0.1"))
    return server


grpc.aio.server = _loopback_server

from phoenix.server.main import main  # noqa: E402  (after the patch, which it must see)

sys.argv = ["phoenix", "serve"]
sys.exit(main())
