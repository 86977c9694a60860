"""The notebooks' stored outputs are a real check: nbval fails when one is changed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def nbval(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
         "--nbval-current-env", str(path)],
        cwd=path.parent, capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def test_nbval_fails_when_a_stored_output_is_tampered_with(tmp_path: Path) -> None:
    source = NOTEBOOKS / "choosing_a_budget.ipynb"
    intact = tmp_path / "intact.ipynb"
    shutil.copy(source, intact)
    passed = nbval(intact)
    assert passed.returncode == 0, passed.stdout + passed.stderr

    nb = nbformat.read(source, as_version=4)
    cell = next(c for c in nb.cells if "N=10" in json.dumps(c.get("outputs", [])))
    assert cell.source.startswith("# NBVAL_CHECK_OUTPUT")
    assert cell.outputs[0].text == "N=10: worst case $0.585\nN=20: worst case $1.77\n"
    cell.outputs[0].text = "N=10: worst case $0.586\nN=20: worst case $1.77\n"
    tampered = tmp_path / "tampered.ipynb"
    nbformat.write(nb, tampered)
    failed = nbval(tampered)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "1 failed" in failed.stdout
    assert "$0.586" in failed.stdout


def test_committed_notebooks_hold_no_machine_dependent_text() -> None:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        for marker in ("/work/", "/tmp/", "/home/", " at 0x"):
            assert marker not in text, f"{path.name} holds {marker!r}"
        # no cell raised (a run's recorded traceback, in a viewer's data, is not an error)
        cells = json.loads(text)["cells"]
        kinds = {o["output_type"] for c in cells for o in c.get("outputs", [])}
        assert "error" not in kinds, path.name


def dollar_pairs(markdown: str) -> list[str]:
    """The paragraphs of ``markdown`` with two or more ``$`` outside code spans. MathJax
    (JupyterLab, Notebook 7, nbviewer) sets the text between them as a formula, and a
    backslash does not stop it in JupyterLab 4 (the browser test saw ``\\$0.03: try \\$0.05``
    set as math): write amounts as ``USD 0.03``, or in a code span."""
    found = []
    for paragraph in markdown.split("\n\n"):
        if paragraph.lstrip().startswith("```"):
            continue
        prose = re.sub(r"`[^`]*`", "", paragraph)
        if prose.count("$") >= 2:
            found.append(paragraph)
    return found


def test_the_dollar_lint_finds_a_pair_escaped_or_not_and_passes_code_spans() -> None:
    assert dollar_pairs("It allows $0.03: try $0.05.") == ["It allows $0.03: try $0.05."]
    assert dollar_pairs(r"It allows \$0.03: try \$0.05.") == [r"It allows \$0.03: try \$0.05."]
    assert dollar_pairs("one $5 note\n\nanother $6 one") == []
    assert dollar_pairs("It allows USD 0.03: try USD 0.05.") == []
    assert dollar_pairs("`$0.03` and `$0.05`") == []
    assert dollar_pairs("```\n$a $b\n```") == []


def test_no_notebook_prose_puts_dollar_amounts_between_math_signs() -> None:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for number, cell in enumerate(nb.cells):
            if cell.cell_type == "markdown":
                bad = dollar_pairs(cell.source)
                assert not bad, f"{path.name} cell {number}: write USD 0.03, not $ in {bad[0]!r}"


def test_committed_notebooks_show_each_widget_as_a_summary() -> None:
    # issue 19, item 9: before they are run, the notebooks showed "RunPanel(children=(HTML(..."
    # where a widget goes, and inspect_trace.ipynb told the reader to move a slider it no
    # longer has
    widgets = 0
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell["cell_type"] == "markdown":
                assert "slider" not in "".join(cell["source"]), path.name
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                if "application/vnd.jupyter.widget-view+json" not in data:
                    continue
                widgets += 1
                plain = "".join(data["text/plain"])
                assert "children=" not in plain, (path.name, plain)
                assert "<style>" not in plain, (path.name, plain)
    assert widgets >= 6  # the panels, the views and the progress bars of the notebooks
