"""The README's example prints exactly the block the README shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = """\
step 0: Looking both of them up.
  - price({"isin": "SE0000108656"}) -> 118.4
  x price({"isin": "SE0000000000"}) -> error: LookupError: SE0000000000 is not in the price list
step 1: One of those is unknown. Converting the one that resolved.
  - convert({"amount": "118.4", "rate": 0.091}) -> 10.77
step 2: SE0000108656 is 118.40 SEK, about 10.77 USD.

stop=answered tools=3 failed=1 cost=$0.002687
"""


def test_offline_example_prints_the_readme_block() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "offline.py")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout == EXPECTED
    assert out.stderr == ""
    assert EXPECTED in (ROOT / "README.md").read_text()
