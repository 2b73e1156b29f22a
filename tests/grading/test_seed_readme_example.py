"""The `rubric` package README example, run with only the import line and generate_fn changed."""

from __future__ import annotations

import asyncio
import json

# --- the README example, verbatim apart from the import line and the generate function -------
from grading import Rubric  # was: from rubric import Rubric
from grading.autograders import PerCriterionGrader  # was: from rubric.autograders import ...
from tests.grading.scripted import verdicts_by_requirement

PROMPTS: list[tuple[str, str]] = []
_route = verdicts_by_requirement({
    "States Q4 2023 base margin as 17.2%": "MET",
    "Explicitly uses Shapley attribution for decomposition": "UNMET",
    "Uses total deliveries instead of cash-only deliveries": "UNMET",
})


async def generate_with_openai(system_prompt: str, user_prompt: str) -> str:
    PROMPTS.append((system_prompt, user_prompt))
    return _route(user_prompt)


async def main():
    # Build rubric
    rubric = Rubric.from_dict([
        {"weight": 10.0, "requirement": "States Q4 2023 base margin as 17.2%"},
        {"weight": 8.0, "requirement": "Explicitly uses Shapley attribution for decomposition"},
        {"weight": -15.0, "requirement": "Uses total deliveries instead of cash-only deliveries"}
    ])

    # Select autograder strategy
    grader = PerCriterionGrader(
        generate_fn=generate_with_openai,
        system_prompt="This overrides the default grader system prompt",
    )

    # Grade output
    result = await rubric.grade(
        query="Input query...",
        to_grade="Output to evaluate...",
        autograder=grader
    )

    print(f"Score: {result.score:.2f}")  # Score is 0.0-1.0
    for criterion in result.report:
        print(f"  [{criterion.verdict}] {criterion.requirement}")
        print(f"    → {criterion.reason}")
# --- end of the example ------------------------------------------------------------------------


def test_readme_example_runs_unchanged(capsys):
    PROMPTS.clear()
    asyncio.run(main())
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Score: 0.56"  # 10 / 18
    assert lines[1] == "  [MET] States Q4 2023 base margin as 17.2%"
    assert lines[3] == "  [UNMET] Explicitly uses Shapley attribution for decomposition"
    assert lines[2] == "    → because States Q4 2023 base margin as 17.2%"
    assert len(PROMPTS) == 3
    assert {system for system, _ in PROMPTS} == {"This overrides the default grader system prompt"}
    assert all("<query>\nInput query...\n</query>" in user for _, user in PROMPTS)


async def test_readme_generate_fn_written_with_the_openai_sdk_works(fake_provider):
    """The README's generate_fn itself, pointed at the local fake provider."""
    from openai import AsyncOpenAI

    async def generate_with_openai(system_prompt: str, user_prompt: str) -> str:
        client = AsyncOpenAI(api_key="test-key", base_url=fake_provider.api_base)
        response = await client.chat.completions.create(
            model="gpt-5-mini",
            messages=[
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": user_prompt},
            ],
            max_tokens=400,
            temperature=0.0,
        )
        return response.choices[0].message.content or ""

    fake_provider.enqueue(json.dumps({"verdict": "UNMET", "reason": "not stated"}))
    rubric = Rubric.from_dict([{"weight": 10.0, "requirement": "States the margin"}])
    result = await rubric.grade("Output", autograder=PerCriterionGrader(generate_with_openai))
    assert result.score == 0.0
    assert result.report[0].reason == "not stated"
    assert "response_format" not in fake_provider.last_body  # a 2-argument fn gets no schema
