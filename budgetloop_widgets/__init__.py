"""budgetloop_widgets: a Jupyter panel that steps a budgetloop run and opens saved traces.

Plain ipywidgets (no front-end build); charts are inline SVG drawn in Python; the styles ship
with the package. Anything a model, a tool or a trace produced is shown as escaped text.
"""

from ._export import to_html
from ._panel import RunPanel
from ._svg import bar_chart, line_chart
from ._text import usd
from ._traceview import TraceView
from ._views import projection_text

__all__ = [
    "RunPanel",
    "TraceView",
    "bar_chart",
    "line_chart",
    "projection_text",
    "to_html",
    "usd",
]
