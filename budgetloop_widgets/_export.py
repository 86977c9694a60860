"""``to_html``: a saved run as one self-contained HTML file, readable with no kernel."""

from __future__ import annotations

import os
from html import escape

from ._traceview import Source
from ._views import as_result

# Navigation only: a row click unfolds its step's card; a search box hides the rows whose
# card does not contain the text. Nothing is fetched, nothing from the trace is evaluated.
SCRIPT = """
(function () {
  var root = document.querySelector('.blh');
  function unfold(id) {
    var card = document.getElementById(id);
    if (!card) { return; }
    root.querySelectorAll('details.sel').forEach(function (d) { d.classList.remove('sel'); });
    card.open = true;
    card.classList.add('sel');
    card.scrollIntoView({block: 'nearest'});
  }
  root.addEventListener('click', function (event) {
    var link = event.target.closest('a[href^="#blh-step-"]');
    var row = event.target.closest('tr[data-step]');
    if (link) { event.preventDefault(); unfold(link.getAttribute('href').slice(1)); }
    else if (row) { unfold('blh-step-' + row.getAttribute('data-step')); }
  });
  var search = document.createElement('input');
  search.type = 'search';
  search.className = 'blh-search';
  search.placeholder = 'search the steps';
  search.setAttribute('aria-label', 'search the steps');
  root.insertBefore(search, root.querySelector('.box'));
  search.addEventListener('input', function () {
    var wanted = search.value.toLowerCase();
    root.querySelectorAll('tr[data-step]').forEach(function (row) {
      var card = document.getElementById('blh-step-' + row.getAttribute('data-step'));
      var hit = !wanted || (card !== null && card.textContent.toLowerCase().indexOf(wanted) >= 0);
      row.classList.toggle('hidden', !hit);
    });
  });
})();
"""

# The page may load nothing: no image, font, script or style from anywhere but itself.
POLICY = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def to_html(
    trace: Source, path: str | os.PathLike[str], *, title: str = "budgetloop trace"
) -> None:
    """Write ``trace`` (a Result, a ``to_dict()`` dict or a saved trace's path) to ``path`` as
    one HTML file that any browser opens with no kernel and no network: ``Result._repr_html_()``
    in a page, plus a small inline script (row clicks unfold a step; a search box)."""
    if not isinstance(title, str):
        raise TypeError(f"to_html: title must be a str, got {type(title).__name__}.")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"to_html: path must be a str or a path, got {type(path).__name__}.")
    result = as_result(trace, where="to_html")
    document = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{escape(title)}</title></head><body>{result._repr_html_()}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(document)
