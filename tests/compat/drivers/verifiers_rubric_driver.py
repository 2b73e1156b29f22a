"""Loads rubric files with the real verifiers 0.4 (its own venv): JSON in, JSON out."""

import json
import sys
import tempfile
from pathlib import Path

from verifiers.v1.judges.rubric import load_criteria, normalize_choice

out = []
for case in json.load(sys.stdin):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rubric.json"
        path.write_text(json.dumps(case))
        try:
            criteria = load_criteria(path)
        except Exception as exc:
            out.append({"error": type(exc).__name__})
            continue
    out.append({"criteria": [
        {"name": c.name, "text": c.text, "weight": c.weight,
         "values": {choice: normalize_choice(choice, c.choices) for choice in c.choices}}
        for c in criteria]})
json.dump(out, sys.stdout)
