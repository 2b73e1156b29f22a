"""Scores traces with the workbench rubric judge inside verifiers 0.4's own Task.score.

Runs in the verifiers venv (tests/compat/venvs.py) with the repository on PYTHONPATH; the
judge is the tests' fake OpenAI-compatible provider. JSON in (stdin), JSON out (stdout).
"""

import asyncio
import json
import sys

from verifiers.v1.configs.agent import AgentConfig
from verifiers.v1.configs.task import TaskConfig
from verifiers.v1.task import Task, TaskData
from verifiers.v1.trace import AgentInfo, Trace, TraceTask


class QA(Task):
    pass


class QAData(TaskData):
    """A task type with a reference-answer field, as a taskset would declare it."""

    answer: str | None = None


def make_trace(task, reply):
    return Trace(task=TraceTask(type="QA", data=task.data), agent=AgentInfo(config=AgentConfig()),
                 root_reply=reply)


async def main():
    cfg = json.load(sys.stdin)
    judge = {"id": "workbench_rubric_judge", "path": cfg["rubric_path"], "model": "judge-model",
             "base_url": cfg["base_url"], "api_key_var": "FAKE_JUDGE_KEY",
             "cannot_assess": cfg.get("cannot_assess", "zero")}
    data = {"prompt": cfg["prompt"]} | ({"answer": cfg["answer"]} if "answer" in cfg else {})
    task = QA(QAData(**data), TaskConfig(judges=[judge]))
    out = []
    for reply in cfg["replies"]:
        trace = make_trace(task, reply)
        try:
            await task.score(trace)
        except Exception as exc:  # the framework's own error for a failed judge
            out.append({"error": type(exc).__name__, "message": str(exc)[:500]})
            continue
        reward = trace.rewards["workbench_rubric_judge"]
        out.append({
            "reward": reward.score if reward else None,
            "metrics": trace.metrics,
            "info": trace.info.get("workbench_rubric"),
            "judge_calls": len(trace.info.get("judge_calls", [])),
            "extra_usage": len(trace.extra_usage),
        })
    json.dump(out, sys.stdout)


asyncio.run(main())
