"""tasks.py, the one command: what its test run says at the end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_says_which_tests_were_skipped_and_why(tmp_path: Path) -> None:
    # issue 19, item 10: without chromium the run ended "957 passed, 6 skipped", no reason shown
    sys.path.insert(0, str(ROOT))
    try:
        import tasks
    finally:
        sys.path.remove(str(ROOT))
    (tmp_path / "test_one.py").write_text(
        "import pytest\n\n"
        "def test_runs():\n    pass\n\n"
        "def test_needs_a_browser():\n"
        "    pytest.skip('NO BROWSER TEST: /usr/bin/chromium is missing')\n",
        encoding="utf-8",
    )
    out = subprocess.run(
        [sys.executable, *tasks.PYTEST, "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    tail = out.stdout.strip().splitlines()
    assert tail[-1].startswith("1 passed, 1 skipped")
    assert tail[-2].startswith("SKIPPED [1] test_one.py:")
    assert tail[-2].endswith("NO BROWSER TEST: /usr/bin/chromium is missing")
