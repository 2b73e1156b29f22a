"""Runs differential cases through the real autorubric (its own venv): JSON in, JSON out."""

import json
import os
import sys
import tempfile
import warnings

from autorubric import Rubric
from autorubric.scoring import score_reports
from autorubric.types import (
    CannotAssessConfig,
    CannotAssessStrategy,
    CriterionReport,
    CriterionVerdict,
    LengthPenalty,
)
from autorubric.utils import compute_length_penalty, normalize_to_grade_input, parse_thinking_output


def run(case):
    kind = case["kind"]
    try:
        if kind == "score":
            reports = [CriterionReport(weight=w, requirement=f"c{i}", verdict=CriterionVerdict(v),
                                       reason="") for i, (w, v) in
                       enumerate(zip(case["weights"], case["verdicts"], strict=True))]
            config = CannotAssessConfig(strategy=CannotAssessStrategy(case["strategy"]),
                                        partial_credit=case["partial_credit"])
            return {"score": score_reports(reports, config, normalize=case["normalize"])}
        if kind == "compute_score":
            from autorubric import Criterion, CriterionOption

            criteria = [Criterion(weight=c["weight"], requirement=c["requirement"],
                                  name=c.get("name"), scale_type=c.get("scale_type", "ordinal"),
                                  options=None if c.get("options") is None else
                                  [CriterionOption(**o) for o in c["options"]])
                        for c in case["criteria"]]
            score = Rubric(criteria).compute_score(
                case["verdicts"], normalize=case["normalize"],
                cannot_assess_strategy=CannotAssessStrategy(case["strategy"]),
                partial_credit=case["partial_credit"])
            return {"score": score}
        if kind == "parse_thinking":
            return dict(parse_thinking_output(case["text"]))
        if kind == "normalize":
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                return {"result": dict(normalize_to_grade_input(case["value"]))}
        if kind == "length_penalty":
            return {"penalty": compute_length_penalty(case["value"],
                                                      LengthPenalty(**case["config"]))}
        if kind == "load":
            with tempfile.TemporaryDirectory() as folder:
                path = os.path.join(folder, "rubric" + case["ext"])
                with open(path, "w") as handle:
                    handle.write(case["content"])
                loaded = Rubric.from_file(path)
            return {"criteria": [[c.weight, c.requirement] for c in loaded.rubric]}
        if kind == "load_missing":
            Rubric.from_file(case["path"])
            return {"loaded": True}
    except Exception as exc:
        return {"error": type(exc).__name__, "is_value_error": isinstance(exc, ValueError),
                "is_file_not_found": isinstance(exc, FileNotFoundError)}
    return {"error": "unknown kind"}


cases = json.load(sys.stdin)
json.dump([run(case) for case in cases], sys.stdout)
