"""Small drawing helpers shared by the Grade, Results and Review pages."""

from __future__ import annotations

import streamlit as st

from grading.types import Verdict
from storage.dto import RunInfo
from ui import safe_text

GRADER_LABELS = {
    "per_criterion": "Per criterion",
    "one_shot": "One-shot",
    "rubric_as_judge": "Rubric as judge",
}
GRADER_HELP = {
    "per_criterion": "one call per criterion: most precise, most calls",
    "one_shot": "all criteria in one call: cheaper, per-criterion verdicts",
    "rubric_as_judge": "one holistic 0-100 score: cheapest, no per-criterion verdicts",
}
VERDICT_BADGES = {
    Verdict.MET: ":green-badge[MET]",
    Verdict.UNMET: ":red-badge[UNMET]",
    Verdict.CANNOT_ASSESS: ":gray-badge[CANNOT ASSESS]",
}
STATUS_BADGES = {
    "queued": ":gray-badge[queued]",
    "running": ":blue-badge[running]",
    "done": ":green-badge[done]",
    "failed": ":red-badge[failed]",
    "cancelled": ":orange-badge[cancelled]",
}


CAPPED_BADGE = ":orange-badge[stopped at its cost cap]"


FINISHED_WITH_FAILURES_BADGE = ":orange-badge[finished with failures]"


PAUSED_BADGE = ":orange-badge[paused]"


def status_text(run: RunInfo) -> str:
    """The run's status as a person reads it (``RunInfo.status_words``, as the CLI says it):
    a run its cost cap stopped is not "failed"; one with failed grades is not plainly
    "done"."""
    return run.status_words


def status_badge(run: RunInfo) -> str:
    if run.stopped_by_cost_cap:
        return CAPPED_BADGE
    if run.paused_by_provider:
        return PAUSED_BADGE
    if run.status == "done" and run.failed_count:
        return FINISHED_WITH_FAILURES_BADGE
    return STATUS_BADGES[run.status]


def run_label(run: RunInfo) -> str:
    name = f" {run.name}" if run.name else ""
    return (f"#{run.id}{name} · {GRADER_LABELS.get(run.grader, run.grader)} · {run.model}"
            + calibrated_suffix(run))


def calibrated_suffix(run: RunInfo) -> str:
    """`` · calibrated (k=4)`` for a run shown reviewed examples; "" otherwise."""
    calibration = run.settings.calibration
    return f" · calibrated (k={calibration.k})" if calibration is not None else ""


def short_run_label(run: RunInfo) -> str:
    return (f"#{run.id} {GRADER_LABELS.get(run.grader, run.grader)} · "
            f"{run.model.split('/')[-1]}" + calibrated_suffix(run))


def verdict_badge(verdict: Verdict | None) -> str:
    return VERDICT_BADGES.get(verdict, ":orange-badge[no verdict]") if verdict else (
        ":orange-badge[no verdict]")


def choice_badge(choice: Verdict | str | None) -> str:
    """A verdict's badge, or a chosen option's label as a badge (multi-choice criteria)."""
    if choice is None or isinstance(choice, Verdict) or choice in VERDICT_BADGES:
        return verdict_badge(Verdict(choice) if choice else None)
    return f":blue-badge[{md_escape(choice)}]"


def choice_text(choice: Verdict | str | None) -> str | None:
    """``MET`` / ``CANNOT_ASSESS``, or the option label as it is; None for no choice."""
    if choice is None:
        return None
    return choice.value if isinstance(choice, Verdict) else str(choice)


def choice_words(choice: Verdict | str | None) -> str:
    """A choice as a sentence says it: ``CANNOT ASSESS``, or the option label as it is."""
    if choice is None:
        return "no verdict"
    return choice.value.replace("_", " ") if isinstance(choice, Verdict) else str(choice)


def format_score(score: float | None) -> str:
    return "—" if score is None else f"{score:.3f}"


def render_untrusted(text: str | None, *, empty: str = "(empty)") -> None:
    """Model output and uploaded text: shown verbatim, never interpreted as HTML/markdown."""
    st.code(safe_text.text(text) if text else empty, language=None, wrap_lines=True,
            height="content")


def md_escape(text: str) -> str:
    """User and model text inside markdown (titles, messages): shown as typed, never markup."""
    return safe_text.md(text)
