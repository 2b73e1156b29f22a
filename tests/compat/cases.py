"""Generated inputs for the differential tests (seeded, so a failure is reproducible)."""

from __future__ import annotations

import json
import random
from typing import Any

import yaml

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu")


def _text(rng: random.Random, low: int = 0, high: int = 30) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def tagged_text(rng: random.Random) -> str:
    """Strings in every form rubric's tag convention covers."""
    thinking, output, extra = _text(rng, 1), _text(rng, 1), _text(rng, 1, 5)
    return rng.choice([
        output,
        f"<thinking>{thinking}</thinking><output>{output}</output>",
        f"<thinking>{thinking}</thinking>\n{output}",
        f"<THINKING> {thinking} </Thinking>{output}",
        f"<output>{output}</output>",
        f"<thinking>{thinking}</thinking>",
        f"{extra}<output>{output}</output>",
        f"<output>{output}</output>{extra}<thinking>{thinking}</thinking>",
        f"{extra} <thinking>{thinking}</thinking> {output} <thinking>{extra}</thinking>",
        f"<thinking>{thinking}",  # unterminated: no section
        f"  {output}  ",
    ])


def to_grade_value(rng: random.Random) -> Any:
    if rng.random() < 0.6:
        return tagged_text(rng)
    value = {}
    if rng.random() < 0.8:
        value["thinking"] = _text(rng)
    if rng.random() < 0.9:
        value["output"] = _text(rng)
    return value


def criteria(rng: random.Random, count: int) -> list[dict[str, Any]]:
    weights = [rng.choice([-15, -8, -3.5, -1, 0, 1, 2.5, 5, 8, 10, 20]) for _ in range(count)]
    if all(w == 0 for w in weights):
        weights[0] = 7  # an all-zero rubric is a deliberate difference (docs/library/drop-in.md)
    return [{"weight": w, "requirement": f"REQ{i:03d} {_text(rng, 1, 6)}"}
            for i, w in enumerate(weights)]


def grade_cases(rng: random.Random, count: int, *, with_length_penalty: bool,
                holistic_out_of_range: bool = True) -> list[dict[str, Any]]:
    cases = []
    for number in range(count):
        grader = ("per_criterion", "one_shot", "holistic")[number % 3]
        items = criteria(rng, rng.randint(1, 6))
        if rng.random() < 0.2:
            items = [{**c, "weight": -abs(c["weight"]) or -1} for c in items]  # all negative
        case = {
            "kind": "grade",
            "id": f"grade-{number}-{grader}",
            "grader": grader,
            "rubric": items,
            "to_grade": to_grade_value(rng),
            "query": rng.choice([None, "", f"question {_text(rng, 1, 5)}"]),
            "verdicts": {c["requirement"][:6]: rng.choice(["MET", "UNMET"]) for c in items},
            "wrap": rng.choice(["bare", "fence", "prose"]),
            "normalize": rng.random() < 0.7,
            "holistic_score": (rng.choice([-12.5, 0, 37, 50, 64.5, 100, 130])
                               if holistic_out_of_range else rng.choice([0, 37, 64.5, 100])),
        }
        if with_length_penalty and rng.random() < 0.5:
            budget = rng.randint(0, 15)
            case["length_penalty"] = {
                "free_budget": budget, "max_cap": budget + rng.randint(1, 20),
                "penalty_at_cap": rng.choice([0.2, 0.5, 1.0, 5.0]),
                "exponent": rng.choice([1.0, 1.6, 2.0]),
                "penalty_type": rng.choice(["ALL", "OUTPUT_ONLY", "THINKING_ONLY"]),
            }
        cases.append(case)
    return cases


def text_cases(rng: random.Random, count: int) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for number in range(count):
        cases.append({"kind": "parse_thinking", "id": f"parse-{number}",
                      "text": tagged_text(rng)})
        value = rng.choice([
            to_grade_value(rng), {"output": _text(rng), "extra": 1}, 42, None, ["x"],
            {"thinking": 3}, {"output": None}, {"thinking": "t", "output": ["x"]},
        ])
        cases.append({"kind": "normalize", "id": f"normalize-{number}", "value": value})
        budget = rng.randint(0, 20)
        cases.append({
            "kind": "length_penalty", "id": f"penalty-{number}",
            "value": rng.choice([_text(rng, 0, 40), tagged_text(rng),
                                 {"thinking": _text(rng, 0, 30), "output": _text(rng, 0, 30)}]),
            "config": {"free_budget": budget, "max_cap": budget + rng.randint(1, 25),
                       "penalty_at_cap": rng.choice([0.1, 0.5, 3.0]),
                       "exponent": rng.choice([0.5, 1.0, 1.6, 3.0]),
                       "penalty_type": rng.choice(["ALL", "OUTPUT_ONLY", "THINKING_ONLY"])},
        })
        payload = {"criterion_status": rng.choice(["MET", "UNMET"]),
                   "explanation": rng.choice(["plain", "has {braces} inside", 'quote " x'])}
        text = json.dumps(payload)
        cases.append({"kind": "parse_json", "id": f"json-{number}", "text": rng.choice([
            text, f"```json\n{text}\n```", f"Sure: {text} hope this helps", f"json {text}",
            f"```json\n{json.dumps(payload, indent=2)}\n```"])})
    return cases


def _criterion_file_item(rng: random.Random, index: int) -> dict[str, Any]:
    item: dict[str, Any] = {"weight": rng.choice([-5, 1, 2.5, 10]),
                            "requirement": f"REQ{index:03d} {_text(rng, 1, 4)}"}
    if rng.random() < 0.4:
        item["id"] = f"c{index}"
    if rng.random() < 0.2:
        item["tags"] = ["x"]
    return item


def file_cases(rng: random.Random, count: int) -> list[dict[str, Any]]:
    cases = []
    for number in range(count):
        flat = [_criterion_file_item(rng, i) for i in range(rng.randint(1, 5))]
        half = max(1, len(flat) // 2)
        sections = [{"id": "s1", "title": "First", "criteria": flat[:half]},
                    {"title": "Second", "criteria": flat[half:] or flat[:1]}]
        shape = rng.choice([
            flat,
            sections,
            {"sections": sections},
            {"rubric": {"id": "r", "sections": sections}},
            {"rubric": flat},
            [sections[0], *flat],
        ])
        ext = rng.choice([".json", ".yaml", ".yml"])
        content = json.dumps(shape) if ext == ".json" else yaml.safe_dump(shape)
        cases.append({"kind": "load", "id": f"file-{number}{ext}", "ext": ext,
                      "content": content})
    return cases
