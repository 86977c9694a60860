"""The run features built on the engine: held runs and ``resume``, ``replay``, ``run_many`` and
fleets, progress, ``output=T``, ``budget_report`` and ``ScriptedModel``."""
