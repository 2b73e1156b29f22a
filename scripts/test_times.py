"""The test suite's time per file, from the JUnit reports scripts/test.sh writes.

    python scripts/test_times.py                    # test-artifacts/junit-*.xml, top 30 files
    python scripts/test_times.py --top 60 some.xml

Sums each test's time (setup, call and teardown, as pytest reports it) per file and prints the
files that cost the most, with their share of the whole: where trimming CI's time pays.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path


def per_file(reports: list[Path]) -> dict[str, tuple[float, int]]:
    times: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for report in reports:
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            name = case.get("classname", "").split(".")
            # classname is the module path, then any test class: keep the module part.
            parts = [p for p in name if p and not p[0].isupper()]
            path = "/".join(parts) + ".py"
            times[path] += float(case.get("time") or 0)
            counts[path] += 1
    return {path: (times[path], counts[path]) for path in times}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="*", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    reports = args.reports or sorted(Path("test-artifacts").glob("junit-*.xml"))
    if not reports:
        print("no JUnit reports: run scripts/test.sh first (it writes test-artifacts/junit-*.xml)",
              file=sys.stderr)
        return 1
    files = per_file(reports)
    total = sum(seconds for seconds, _ in files.values())
    print(f"{len(files)} files, {sum(n for _, n in files.values())} tests, {total:.0f} s of "
          "worker time")
    for path, (seconds, count) in sorted(files.items(), key=lambda item: -item[1][0])[:args.top]:
        print(f"{seconds:8.1f} s {100 * seconds / total:5.1f}% {count:5d} tests  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
