"""The README's example prints exactly the block the README shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

EXPECTED = """\
step 0: Looking both of them up.
  - price({"isin": "SE0000108656"}) -> 118.4
  x price({"isin": "SE0000000000"}) -> error: LookupError: SE0000000000 is not in the price list
step 1: One of those is unknown. Converting the one that resolved.
  - convert({"amount": "118.4", "rate": 0.091}) -> 10.77
step 2: SE0000108656 is 118.40 SEK, about 10.77 USD.

stop=answered tools=3 failed=1 cost=$0.0027
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


def test_the_approve_elsewhere_example_resumes_once_and_refuses_the_second() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "approve_elsewhere.py")],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    lines = out.stdout.splitlines()
    assert lines[:5] == [
        "worker: stop=held waiting=2",
        'pending: c2 transfer({"to": "bob", "amount": 9000.0})',
        'pending: c3 transfer({"to": "cy", "amount": 20000.0})',
        "decide: c2 edited to 5000, c3 denied",
        "resume: stop=answered answer='Paid ann 50 and bob 5,000; the 20,000 to cy was denied.'",
    ]
    assert "  ! transfer" in out.stdout
    assert "[edited to" in out.stdout
    assert lines[-1] == (
        "resume refused: resume: the held batch of run.jsonl must be waiting for a decision,"
    )
    assert out.stderr == ""
