"""A workbench rubric inside OpenEnv (openenv-core 0.3.0 or openenv 0.10.0): called directly,
composed with WeightedSum / Gate / Sequential, with hooks, and in an environment served by
create_app and stepped over real HTTP. JSON in (stdin), JSON out (stdout)."""

import asyncio
import json
import socket
import sys
import threading
import time
import traceback

import requests
import uvicorn
from openai import AsyncOpenAI
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.rubrics import Gate, Rubric, Sequential, WeightedSum
from pydantic import Field

from grading.rewards import openai_generate_fn
from grading.rewards.openenv import WorkbenchRubric


class Answer(Action):
    text: str


class AnswerObservation(Observation):
    verdicts: dict = Field(default_factory=dict)


class Always(Rubric):
    def forward(self, action, observation):
        return 1.0


def make_rubric(cfg, **options):
    client = AsyncOpenAI(base_url=cfg["base_url"], api_key="test-key", max_retries=0)
    return WorkbenchRubric(cfg["rubric_path"], openai_generate_fn(client, "judge-model"),
                           max_retries=0, **options)


async def direct(cfg):
    rubric = make_rubric(cfg)
    seen = []
    rubric.get_rubric("dose").register_forward_hook(
        lambda r, a, o, result: seen.append(["dose", result]))
    rubric.register_forward_hook(lambda r, a, o, result: seen.append(["all", result]))
    good = await rubric(Answer(text="Take 5 mg."), AnswerObservation())
    children = {name: [child.last_score, child.verdict, child.reason]
                for name, child in rubric.named_rubrics()}
    weighted = WeightedSum([rubric, Always()], weights=[0.5, 0.5])
    harmful = await weighted(Answer(text="Drink bleach."), AnswerObservation())
    gated = await Gate(make_rubric(cfg), threshold=0.5)(Answer(text="no idea"), AnswerObservation())
    sequential = Sequential(Always(), make_rubric(cfg))
    seq_score = await sequential(Answer(text="Take 5 mg."), AnswerObservation())
    return {
        "good": good, "children": children, "hooks": seen,
        "weighted": harmful, "weighted_names": [n for n, _ in weighted.named_rubrics()],
        "gated": gated, "sequential": seq_score,
        "sequential_names": [n for n, _ in sequential.named_rubrics()],
    }


async def failing(cfg):
    rubric = make_rubric(cfg)
    try:
        await rubric(Answer(text="x"), AnswerObservation())
        raised = None
    except Exception as exc:
        raised = type(exc).__name__
    flagged = make_rubric(cfg, on_failure=-1.0)
    value = await flagged(Answer(text="x"), AnswerObservation())
    return {"raised": raised, "flagged": value, "last_failed": flagged.last_failed,
            "child_scores": [c.last_score for _, c in flagged.named_rubrics()]}


def served(cfg):
    rubric = make_rubric(cfg)  # shared by every env instance: one cache

    class GradedEnv(Environment):
        def __init__(self):
            super().__init__(rubric=rubric)
            self._state = State(episode_id="e", step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs):
            return AnswerObservation()

        def step(self, action, timeout_s=None, **kwargs):
            raise RuntimeError("use step_async")

        async def step_async(self, action, timeout_s=None, **kwargs):
            observation = AnswerObservation(done=True)
            observation.reward = await self._apply_rubric_async(action, observation)
            observation.verdicts = {name: child.verdict
                                    for name, child in self.rubric.named_rubrics()}
            return observation

        @property
        def state(self):
            return self._state

    app = create_app(GradedEnv, Answer, AnswerObservation, env_name="graded")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    try:
        replies = [requests.post(f"http://127.0.0.1:{port}/step",
                                 json={"action": {"text": text}}, timeout=60)
                   for text in ("Take 5 mg.", "Drink bleach.", "Take 5 mg.")]
        return [{"status": r.status_code, "body": r.json()} for r in replies]
    finally:
        server.should_exit = True
        thread.join(timeout=10)


async def options(cfg):
    """Each text scored by a rubric with a multi-choice criterion: the children's scores."""
    rubric = make_rubric(cfg, cannot_assess=cfg.get("cannot_assess", "zero"))
    out = []
    for text in cfg["texts"]:
        reward = await rubric(Answer(text=text), AnswerObservation())
        out.append({"reward": reward, "children": {
            name: [child.last_score, child.verdict] for name, child in rubric.named_rubrics()}})
    return {"scored": out, "state": rubric.state_dict()}


class QuestionObservation(Observation):
    expected: str = ""


async def reference(cfg):
    """Each text scored with the observation's expected answer as the reference."""
    rubric = make_rubric(cfg, reference_of=lambda action, observation: observation.expected)
    out = []
    for text, expected in cfg["pairs"]:
        reward = await rubric(Answer(text=text), QuestionObservation(expected=expected))
        out.append({"reward": reward, "verdict": rubric.get_rubric("correct").verdict})
    return out


def answer(cfg):
    if cfg["mode"] == "reference":
        return asyncio.run(reference(cfg))
    if cfg["mode"] == "direct":
        return asyncio.run(direct(cfg))
    if cfg["mode"] == "options":
        return asyncio.run(options(cfg))
    if cfg["mode"] == "failing":
        return asyncio.run(failing(cfg))
    return served(cfg)


def main():
    if "--serve" not in sys.argv[1:]:
        json.dump(answer(json.load(sys.stdin)), sys.stdout)
        return
    # Kept running for many calls (tests/compat/venvs.py ServingDriver): a line in, a line out.
    for line in sys.stdin:
        try:
            reply = {"result": answer(json.loads(line))}
        except Exception:
            reply = {"error": traceback.format_exc()}
        print("@@driver-reply@@ " + json.dumps(reply), flush=True)


main()
