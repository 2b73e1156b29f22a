"""Scores states with workbench rubric reward functions inside verifiers 0.3.1's own
vf.Rubric.score_group / score_rollout (the legacy API). JSON in (stdin), JSON out (stdout)."""

import asyncio
import json
import sys

import verifiers as vf
from openai import AsyncOpenAI

from grading.rewards import RubricReward, openai_generate_fn
from grading.rewards.verifiers_legacy import failure_metric, group_reward_func, reward_func


def state(prompt, reply, answer=""):
    s = vf.State()
    s["prompt"] = [{"role": "user", "content": prompt}]
    s["completion"] = [{"role": "assistant", "content": reply}]
    s["trajectory"] = []
    s["answer"] = answer
    s["info"] = {}
    return s


def view(s):
    return {"reward": s.get("reward"), "metrics": s.get("metrics"),
            "workbench": s.get("workbench_rubric")}


async def main():
    cfg = json.load(sys.stdin)
    client = AsyncOpenAI(base_url=cfg["base_url"], api_key="test-key", max_retries=0)
    reward = RubricReward(cfg["rubric_path"], openai_generate_fn(client, "judge-model"),
                          on_failure=cfg["on_failure"], max_retries=0)
    group = vf.Rubric(funcs=[group_reward_func(reward), failure_metric()], weights=[1.0, 0.0])
    answers = cfg.get("answers") or [""] * len(cfg["replies"])
    states = [state(cfg["prompt"], r, a) for r, a in zip(cfg["replies"], answers, strict=True)]
    await group.score_group(states)
    single = vf.Rubric(funcs=[reward_func(reward, name="rubric_single")])
    one = state(cfg["prompt"], cfg["replies"][0])
    await single.score_rollout(one)
    json.dump({"group": [view(s) for s in states], "single": view(one),
               "is_group": [group._is_group_func(f) for f in group.funcs]}, sys.stdout)


asyncio.run(main())
