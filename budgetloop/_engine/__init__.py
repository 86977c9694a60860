"""The engine: the turn (a sans-IO generator) in layers, its drivers (``Session``,
``AsyncSession``) and entry points, the run options and the data a turn passes around."""
