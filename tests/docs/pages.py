"""The documentation's pages and their fenced code blocks, for the tests that run them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# Examples that need an RL framework run in its own venv: tests/rewards/test_docs_examples.py.
FRAMEWORK_MARK = "<!-- runnable example (tests/rewards/test_docs_examples.py):"
_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\n(?P<code>.*?)^(?P=indent)```",
                    re.M | re.S)


def blocks(lang: str) -> list[tuple[str, str, str]]:
    """(page, line, code) of every ```lang block, code dedented; a block right after the
    framework mark is left out."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in _FENCE.finditer(text):
            if match["lang"] != lang:
                continue
            before = text[:match.start()].rstrip().rsplit("\n", 1)[-1]
            if before.startswith(FRAMEWORK_MARK):
                continue
            indent = len(match["indent"])
            code = "\n".join(line[indent:] for line in match["code"].splitlines())
            line = text.count("\n", 0, match.start()) + 1
            found.append((str(page.relative_to(ROOT)), str(line), code + "\n"))
    return found
