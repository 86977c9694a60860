"""budgetloop_widgets: a Jupyter panel that steps, runs, pauses and forks a budgetloop run, and
one viewer of runs (a saved trace, two runs side by side, a run in a cell or in a file).

The panel is ipywidgets; the viewer is a plain ES module shipped here (``viewer.js``), run by
anywidget or inline in a page: no front-end build. Charts are inline SVG drawn in Python.
Anything a model, a tool or a trace produced is shown as text.
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
