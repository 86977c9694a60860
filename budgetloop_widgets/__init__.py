"""budgetloop_widgets: a Jupyter panel that steps, runs, pauses and forks a budgetloop run,
opens saved traces and compares two runs.

Plain ipywidgets (no front-end build); charts are inline SVG drawn in Python; the styles ship
with the package. Anything a model, a tool or a trace produced is shown as escaped text.
"""

from ._compare import CompareView
from ._export import to_html
from ._panel import RunPanel
from ._svg import bar_chart, line_chart
from ._text import usd
from ._traceview import TraceView
from ._views import projection_text

__all__ = [
    "CompareView",
    "RunPanel",
    "TraceView",
    "bar_chart",
    "line_chart",
    "projection_text",
    "to_html",
    "usd",
]
