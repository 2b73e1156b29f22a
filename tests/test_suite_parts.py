"""scripts/test.sh runs the suite in two parts at once (tests/conftest.py --one-at-a-time):
the timing files alone, the rest beside them. Together the parts must be the whole run, each
test in exactly one: a test in neither would never run in CI, and nothing would say so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# one file of the timing list, one not in it
FILES = ["tests/jobs/test_limiter.py", "tests/grading/test_agreement.py"]


def _collected(part: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", "not e2e and not real_model", f"--one-at-a-time={part}", *FILES],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_the_timing_part_and_the_rest_are_the_whole_run_each_test_in_one():
    whole, only, without = (_collected(part) for part in ("with", "only", "without"))
    assert only and without  # both files have tests
    assert only | without == whole and not only & without
    assert all(test.startswith(FILES[0]) for test in only)
    assert all(test.startswith(FILES[1]) for test in without)
