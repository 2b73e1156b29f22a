"""The inputs of the agreement report for a rubric version x dataset, gathered in one read.

Sources are each run's and each panel's judge verdicts keyed by ``(response_id,
criterion_id)``, and the current human verdicts ("Human", always first when present). A
calibrated run, or a panel with calibrated members, keeps only the responses it did not show
as examples. The numbers are computed from these in storage.services.agreement.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sqlalchemy import Select, false, func, select
from sqlalchemy.orm import Session

from grading.types import ScoringSettings, ToGradeInput, Verdict
from storage import models as m
from storage.convert import criterion_info, run_info
from storage.dto import CriterionInfo, HumanVerdictInfo, RunInfo
from storage.effective import compute_human_score
from storage.engine import SessionFactory
from storage.key_pool import KeyPool
from storage.repositories import datasets as dataset_repo
from storage.repositories import effective as effective_repo
from storage.repositories import results as results_repo
from storage.repositories import rubrics as rubric_repo
from storage.repositories import runs as run_repo
from storage.repositories.datasets import response_texts
from storage.services import calibration, effective_reads
from storage.services.agreement_people import PeopleRows, read_rows
from storage.services.panel_results import (
    PanelSource,
    member_models,
    panel_label,
    panel_sources,
)
from storage.services.score_column import ScoreColumn

HUMAN = "human"
GRADER_LABELS = {
    "per_criterion": "per-criterion",
    "one_shot": "one-shot",
    "rubric_as_judge": "rubric-as-judge",
}

Key = tuple[int, int]  # (response_id, criterion_id)


@dataclass(frozen=True)
class AgreementSource:
    """One source of verdicts and/or scores: a run, or the human reviewers."""

    key: str  # "run:<id>", "panel:<id>" or "human"
    label: str
    run_id: int | None
    grader: str | None
    model: str | None
    status: str | None
    per_criterion: bool  # False for holistic runs: no per-criterion verdicts
    verdict_count: int
    grades: int
    failed: int
    total_tokens: int
    cost: float | None  # sum of known costs; None when no grade's cost is known
    unknown_cost_count: int
    # A judge panel (storage.services.panels): its member runs' ids, in order.
    panel_id: int | None = None
    member_run_ids: tuple[int, ...] = ()

    @property
    def is_human(self) -> bool:
        return self.key == HUMAN

    @property
    def is_panel(self) -> bool:
        return self.panel_id is not None

    @property
    def tokens_per_grade(self) -> float | None:
        return self.total_tokens / self.grades if self.grades else None

    @property
    def cost_per_grade(self) -> float | None:
        priced = self.grades - self.unknown_cost_count
        return self.cost / priced if self.cost is not None and priced > 0 else None


@dataclass(frozen=True)
class AgreementData:
    """Everything the metrics need, gathered in one read; plain values only (picklable)."""

    rubric_version_id: int
    dataset_id: int
    criteria: tuple[CriterionInfo, ...]
    # response id -> external id, or "#<id>", ascending (a LabelColumn from the database)
    response_labels: Mapping[int, str]
    sources: tuple[AgreementSource, ...]  # Human first (when reviewed), then runs by id
    verdicts: dict[str, dict[Key, Verdict]]  # source key -> verdicts
    reasons: dict[str, dict[Key, str]]  # judge reasons and human notes, for disagreements
    judge_scores: dict[str, dict[int, float]]  # run key -> response -> the judge's own score
    # run key -> response -> human score under that run's scoring settings, so that a run
    # with normalize off is compared with a raw human score, not a normalized one.
    human_scores: dict[str, dict[int, float]]
    reviewed_responses: int  # with at least one human verdict
    fully_reviewed_responses: int  # every criterion reviewed
    # Each reviewer's own current verdicts (reviewer key -> verdicts), their names, and the
    # seconds they took per response (the longest save of each response), for the baseline.
    reviewer_verdicts: dict[str, dict[Key, Verdict]] = field(default_factory=dict)
    reviewer_names: dict[str, str] = field(default_factory=dict)
    reviewer_seconds: dict[str, dict[int, float]] = field(default_factory=dict)
    # Calibrated runs (run key -> HeldOut): their verdicts and scores above leave out the
    # responses they showed as examples.
    held_out: dict[str, calibration.HeldOut] = field(default_factory=dict)
    # False: the judges' (runs' and panels') ``verdicts`` and ``reasons`` cover only the
    # responses someone reviewed (issue 41: the report's figures come from the database's
    # counts, and what reads per-key verdicts reads people's and the judges' beside them),
    # and a counted report's ``reasons`` hold people's notes only (the judges' are read
    # for the disagreements listed: ``agreement_listing.with_judge_reasons``);
    # each source's ``verdict_count`` still counts all of its verdicts. Whatever needs every
    # judge verdict (the disagreement lists, the trust report, a blind viewer's report)
    # reads them from the database (``gather_sources``).
    complete: bool = True

    def source(self, key: str) -> AgreementSource:
        return next(s for s in self.sources if s.key == key)

    def count_of(self, key: str) -> int:
        """How many verdicts the source gave (in ``verdicts`` when the data is complete)."""
        if self.complete or key == HUMAN:
            return len(self.verdicts.get(key, {}))
        return self.source(key).verdict_count

    @property
    def verdict_sources(self) -> tuple[AgreementSource, ...]:
        return tuple(s for s in self.sources if s.per_criterion and self.count_of(s.key))

    def criterion_label(self, criterion_id: int) -> str:
        return next(c.label for c in self.criteria if c.id == criterion_id)


def run_label(run: RunInfo) -> str:
    name = f" {run.name}" if run.name else ""
    calibrated = (f" · calibrated (k={run.settings.calibration.k})"
                  if run.settings.calibration is not None else "")
    return (f"#{run.id}{name} · {GRADER_LABELS.get(run.grader, run.grader)} · {run.model}"
            + calibrated)


def gather_sources(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    complete: bool = True, within: Select | None = None, judge_reasons: bool = True,
) -> AgreementData:
    """Each run's judge verdicts and scores, the human verdicts and scores, tokens and cost.

    Read as rows, not ORM instances, in a handful of queries: 2,000 responses x 3 runs x
    8 criteria is about 50,000 verdicts. ``complete=False``: the judges' verdicts and
    reasons of the reviewed responses only, and each judge's ``verdict_count`` left at -1
    (not counted: the report takes it from the database's counts, ``with_counts``).
    ``within`` (with ``complete=False``): a query of the response ids whose judge verdicts
    to read instead (default: the reviewed responses). ``judge_reasons`` False (with
    ``complete=False``): ``reasons`` holds people's notes only, as a counted report keeps
    them (the disagreement list reads the judges' reasons of what it lists:
    ``agreement_listing.with_judge_reasons``).
    """
    return gather_with_newest(sessions, rubric_version_id, dataset_id, complete, within,
                              judge_reasons=judge_reasons)[0]


def gather_with_newest(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    complete: bool = True, within: Select | None = None, stored: Mapping | None = None,
    judge_reasons: bool = True,
) -> tuple[AgreementData, dict[str, int]]:
    """``gather_sources``, and the id of each reviewer's newest current verdict (whose name
    ``reviewer_names`` holds): what the kept report patches (agreement_kept). ``stored``:
    source key -> its grades (``agreement_inputs.SourceGrades``) made at the current
    judges' stamp; those sources' scores are taken from it, not read (as ``ScoreColumn``s)."""
    data, newest, _rows = gather_people(sessions, rubric_version_id, dataset_id, complete,
                                        within, stored, judge_reasons=judge_reasons)
    return data, newest


def gather_people(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
    complete: bool = True, within: Select | None = None, stored: Mapping | None = None,
    rows: PeopleRows | None = None, judge_reasons: bool = True,
) -> tuple[AgreementData, dict[str, int], PeopleRows]:
    """``gather_with_newest``, and the rows it read of people's side (``PeopleRows``: the
    runs' verdicts only of the runs with ``stored`` grades). ``rows``: those rows made at
    the current stamp (kept: storage.services.agreement_people_store), not read again.
    ``judge_reasons``: as ``gather_sources``' (ignored when ``complete``)."""
    stored = stored or {}
    if not complete and within is None:
        within = effective_repo.reviewed_ids_query(rubric_version_id, dataset_id).order_by(None)
    if complete:
        within = None
    with sessions() as session:
        version = rubric_repo.get_version(session, rubric_version_id)
        criteria = tuple(criterion_info(c) for c in version.criteria)
        dataset_repo.get_dataset(session, dataset_id)
        runs = [run_info(r) for r in run_repo.list_runs(
            session, rubric_version_id=rubric_version_id, dataset_id=dataset_id)]
        if rows is None:
            rows = read_rows(session, rubric_version_id, dataset_id,
                             [run.id for run in runs if f"run:{run.id}" in stored], within)
        labels = rows.labels
        # one tuple per (response, criterion) key in every dict of the data (KeyPool):
        # the runs' rows' first (they share theirs)
        key = KeyPool()
        for choices in rows.runs.values():
            key.seed(choices)
        reasons = complete or judge_reasons
        if rows.runs and reasons:
            raise ValueError("people's rows hold the runs' choices, not their reasons: "
                             "gather them with judge_reasons=False")
        grades = {run.id: (run_repo.RunVerdicts({}, rows.runs[run.id], {})
                           if run.id in rows.runs and f"run:{run.id}" in stored else
                           run_repo.run_verdicts(session, run.id, within,
                                                 scores=f"run:{run.id}" not in stored,
                                                 key=key, reasons=reasons))
                  for run in runs}
        # A calibrated run is measured only on the responses it did not show as examples.
        used = calibration.example_response_ids(
            session, [run.id for run in runs if run.settings.calibration is not None])
        humans, own = rows.applied, rows.own
        reviewed = sorted({h.response_id for h in humans})
        by_response: dict[int, dict[int, effective_repo.AppliedRow]] = defaultdict(dict)
        for h in humans:
            by_response[h.response_id][h.criterion_id] = h
        whole = [rid for rid in reviewed if len(by_response[rid]) == len(criteria)]
        needs_text = any(run.settings.length_penalty is not None for run in runs)
        texts = response_texts(session, whole) if needs_text else {}

    gathered = _Gathered()
    for run in runs:
        _add_run(gathered, run, grades[run.id], used.get(run.id, set()),
                 stored.get(f"run:{run.id}"))
    found_panels = panel_sources(sessions, rubric_version_id, dataset_id, within, stored,
                                 key=key)
    for found in found_panels:
        _add_panel(gathered, found, used)
        needs_text = needs_text or found.panel.scoring.length_penalty is not None
    if needs_text and not texts:
        with sessions() as session:
            texts = response_texts(session, whole)

    keys = [key(h.response_id, h.criterion_id) for h in humans]
    gathered.verdicts[HUMAN] = {k: h.choice for k, h in zip(keys, humans, strict=True)}
    gathered.reasons[HUMAN] = {k: h.note for k, h in zip(keys, humans, strict=True)}
    del keys
    if not (complete or judge_reasons):
        # 160,000 reasons at 100,000 responses with 5% reviewed (18 MB of the kept report
        # with the benchmark's short reasons; several times that with a real judge's)
        gathered.reasons = {HUMAN: gathered.reasons[HUMAN]}
    if humans:
        gathered.sources.insert(0, AgreementSource(
            key=HUMAN, label="Human", run_id=None, grader=None, model=None, status=None,
            per_criterion=True, verdict_count=len(humans), grades=0, failed=0,
            total_tokens=0, cost=None, unknown_cost_count=0,
        ))
    human_scores = _human_scores(gathered.scorings, rubric_version_id, criteria,
                                 {rid: by_response[rid] for rid in whole}, texts)
    per_reviewer, names, seconds, newest = _per_reviewer(own, key)
    held_out = {key: calibration.HeldOut.of(k, set(reviewed), shown)
                for key, (k, shown) in gathered.shown.items()}
    data = AgreementData(
        held_out=held_out,
        rubric_version_id=rubric_version_id, dataset_id=dataset_id, criteria=criteria,
        response_labels=labels, sources=tuple(gathered.sources), verdicts=gathered.verdicts,
        reasons=gathered.reasons, judge_scores=gathered.judge_scores, human_scores=human_scores,
        reviewed_responses=len(reviewed), fully_reviewed_responses=len(whole),
        reviewer_verdicts=per_reviewer, reviewer_names=names, reviewer_seconds=seconds,
        complete=complete,
    )
    return (data if complete else _uncounted(data)), newest, rows


def judge_sources(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                  stored: Mapping) -> tuple[tuple[AgreementSource, ...], dict] | None:
    """The judges' sources and scores as ``gather_people`` makes them (``complete=False``)
    with every run's and ready panel's grades ``stored``, without reading a verdict: each
    one's label, status, grades, tokens and cost (``verdict_count`` left to the database's
    count: -1) and its scores. None when a source's grades are not in ``stored``."""
    with sessions() as session:
        runs = [run_info(r) for r in run_repo.list_runs(
            session, rubric_version_id=rubric_version_id, dataset_id=dataset_id)]
        used = calibration.example_response_ids(
            session, [run.id for run in runs if run.settings.calibration is not None])
    if any(f"run:{run.id}" not in stored for run in runs):
        return None
    gathered = _Gathered()
    for run in runs:
        _add_run(gathered, run, run_repo.RunVerdicts({}, {}, {}), used.get(run.id, set()),
                 stored[f"run:{run.id}"])
    none = select(m.ResponseRow.id).where(false())
    for found in panel_sources(sessions, rubric_version_id, dataset_id, none, stored):
        if f"panel:{found.panel.id}" not in stored:
            return None
        _add_panel(gathered, found, used)
    return (tuple(s if not s.per_criterion else replace(s, verdict_count=-1)
                  for s in gathered.sources), gathered.judge_scores)


def _uncounted(data: AgreementData) -> AgreementData:
    """A judge's verdicts of the reviewed responses are not all of them: its count is not
    known until the database counts them (-1)."""
    return replace(data, sources=tuple(
        s if s.is_human or not s.per_criterion else replace(s, verdict_count=-1)
        for s in data.sources))


def with_counts(data: AgreementData, counts: dict[str, int]) -> AgreementData:
    """``data`` with each judge's verdicts counted by the database (``counts``: source key
    -> verdicts; a source not in it gave none)."""
    return replace(data, sources=tuple(
        s if s.is_human or not s.per_criterion else replace(
            s, verdict_count=counts.get(s.key, 0)) for s in data.sources))


@dataclass
class _Gathered:
    """The judge sources as they are gathered, in order: runs by id, then panels."""

    sources: list[AgreementSource] = field(default_factory=list)
    verdicts: dict[str, dict[Key, Verdict]] = field(default_factory=dict)
    reasons: dict[str, dict[Key, str]] = field(default_factory=dict)
    judge_scores: dict[str, dict[int, float]] = field(default_factory=dict)
    scorings: dict[str, ScoringSettings] = field(default_factory=dict)
    # source key -> (calibration k, responses shown as examples) for calibrated sources
    shown: dict[str, tuple[int, set[int]]] = field(default_factory=dict)


def _add_run(gathered: _Gathered, run: RunInfo, grades: run_repo.RunVerdicts,
             shown: set[int], stored=None) -> None:
    """``stored``: the run's grades kept by the judges' stamp (its scores not read)."""
    key = f"run:{run.id}"
    if shown:
        verdicts = {k: v for k, v in grades.choices.items() if k[0] not in shown}
        reasons = {k: v for k, v in grades.reasons.items() if k[0] not in shown}
    else:
        verdicts, reasons = grades.choices, grades.reasons
    if stored is not None:
        scores, graded = stored.column(shown), stored.graded
    else:
        scores = {rid: score for rid, score in grades.scores.items()
                  if score is not None and rid not in shown}
        graded = len(grades.scores)
    gathered.verdicts[key], gathered.reasons[key], gathered.judge_scores[key] = (
        verdicts, reasons, scores)
    gathered.scorings[key] = run.settings.scoring()
    if run.settings.calibration is not None:
        gathered.shown[key] = (run.settings.calibration.k, shown)
    gathered.sources.append(AgreementSource(
        key=key, label=run_label(run), run_id=run.id, grader=run.grader,
        model=run.model, status=run.status,
        per_criterion=run.grader != "rubric_as_judge", verdict_count=len(verdicts),
        grades=graded, failed=run.failed_count, total_tokens=run.total_tokens,
        cost=None if graded and run.unknown_cost_count >= graded else run.cost,
        unknown_cost_count=run.unknown_cost_count,
    ))


def _add_panel(gathered: _Gathered, found: PanelSource, used: dict[int, set[int]]) -> None:
    panel, key = found.panel, f"panel:{found.panel.id}"
    # A panel with calibrated members is measured only where no member was shown the
    # response as an example (a member's example would leak people's verdict into it).
    shown = set().union(*(used.get(member.run.id, set()) for member in panel.members))
    gathered.verdicts[key] = {k: v for k, v in found.verdicts.items() if k[0] not in shown}
    gathered.reasons[key] = {k: v for k, v in found.reasons.items() if k[0] not in shown}
    gathered.judge_scores[key] = (found.scores.without(shown)
                                  if isinstance(found.scores, ScoreColumn) else
                                  {r: v for r, v in found.scores.items() if r not in shown})
    ks = [member.run.settings.calibration.k for member in panel.members
          if member.run.settings.calibration is not None]
    if ks:
        gathered.shown[key] = (max(ks), shown)
    gathered.scorings[key] = panel.scoring
    gathered.sources.append(AgreementSource(
        key=key, label=panel_label(panel),
        run_id=None, grader="panel", model=member_models(panel), status=found.status,
        per_criterion=True, verdict_count=len(gathered.verdicts[key]), grades=found.grades,
        failed=0, total_tokens=found.total_tokens, cost=found.cost,
        unknown_cost_count=found.unknown_cost_count, panel_id=panel.id,
        member_run_ids=tuple(member.run.id for member in panel.members)))


def _human_scores(
    scorings: dict[str, ScoringSettings], rubric_version_id: int,
    criteria: tuple[CriterionInfo, ...], complete: dict[int, dict[int, effective_repo.AppliedRow]],
    texts: dict[int, ToGradeInput],
) -> dict[str, dict[int, float]]:
    """The human score of each fully reviewed response under each source's own scoring
    settings (normalize, CANNOT_ASSESS strategy, length penalty), through the same function
    as storage.services.reviews.human_scores."""
    human_scores: dict[str, dict[int, float]] = {}
    by_settings: dict[str, dict[int, float]] = {}
    for source_key, scoring in scorings.items():
        cache_key = scoring.model_dump_json()
        if cache_key not in by_settings:
            by_settings[cache_key] = {}
            for rid, humans in complete.items():
                result = compute_human_score(
                    response_id=rid, rubric_version_id=rubric_version_id, criteria=criteria,
                    humans=humans, settings=scoring, to_grade=texts.get(rid))
                if result.score is not None:
                    by_settings[cache_key][rid] = result.score
        human_scores[source_key] = by_settings[cache_key]
    return human_scores


def _per_reviewer(own: Sequence[HumanVerdictInfo | effective_reads.ReviewRow],
                  key: KeyPool | None = None) -> tuple[
        dict[str, dict[Key, Verdict]], dict[str, str], dict[str, dict[int, float]],
        dict[str, int]]:
    """Each reviewer's verdicts, name (the one of their newest verdict: a signed-in person's
    name may change), seconds per response (the longest save of each), and the id of the
    newest verdict."""
    per_reviewer: dict[str, dict[Key, Verdict]] = defaultdict(dict)
    newest: dict = {}  # reviewer -> their newest verdict: the name they last saved with
    seconds: dict[str, dict[int, float]] = defaultdict(dict)
    for h in own:
        per_reviewer[h.reviewer_key][
            (h.response_id, h.criterion_id) if key is None
            else key(h.response_id, h.criterion_id)] = h.choice
        if h.reviewer_key not in newest or h.id > newest[h.reviewer_key].id:
            newest[h.reviewer_key] = h
        if h.review_seconds is not None:
            spent = seconds[h.reviewer_key]
            spent[h.response_id] = max(spent.get(h.response_id, 0.0), h.review_seconds)
    names = {key: h.reviewer for key, h in newest.items()}
    return (dict(per_reviewer), names, dict(seconds),
            {key: h.id for key, h in newest.items()})


def current_human_verdicts(
    session: Session, rubric_version_id: int, dataset_id: int
) -> list[HumanVerdictInfo]:
    """The human verdict in force (adjudicated, or agreed by every reviewer who answered) of
    every decided (response, criterion), carried-over verdicts included; disputed criteria
    have none (storage.services.consensus). Read from ``effective_verdicts``, which every
    writer keeps equal to that rule (storage.services.effective_upkeep)."""
    return effective_repo.applied_verdicts(session, rubric_version_id, dataset_id)


def reviewer_verdicts(
    session: Session, rubric_version_id: int, dataset_id: int
) -> list[HumanVerdictInfo]:
    """Every reviewer's own current verdict (not adjudications), carried-over included, by
    response then criterion: each stream's current verdict on the keys of
    ``effective_verdicts`` (``effective_reads.current_reviews``), as plain columns."""
    return effective_reads.current_reviews(session, rubric_version_id, dataset_id)


def data_stamp(
    sessions: SessionFactory, rubric_version_id: int, dataset_id: int
) -> tuple[tuple[tuple, ...], tuple[int, int], tuple[int, ...]]:
    """A cheap fingerprint of what the report reads: each run's marks (done and failed
    counts, status: ``results.run_marks``), the number and newest id of the human verdicts,
    and the ready panels' ids. Cached readers key on it."""
    with sessions() as session:
        run_rows = session.execute(
            results_repo.run_marks()
            .where(m.RunRow.rubric_version_id == rubric_version_id,
                   m.RunRow.dataset_id == dataset_id)
            .order_by(m.RunRow.id)).all()
        count, newest = session.execute(
            select(func.count(), func.max(m.HumanVerdictRow.id))
            .join(m.ResponseRow, m.ResponseRow.id == m.HumanVerdictRow.response_id)
            # every version: verdicts on earlier versions carry into this one
            .where(m.ResponseRow.dataset_id == dataset_id)).one()
        panel_ids = tuple(session.scalars(  # the ready ones: a filled panel moves it
            select(m.PanelRow.id).where(m.PanelRow.rubric_version_id == rubric_version_id,
                                        m.PanelRow.dataset_id == dataset_id,
                                        m.PanelRow.id.not_in(select(m.PanelFillRow.panel_id)))
            .order_by(m.PanelRow.id)))
    return (tuple(tuple(row) for row in run_rows),
            (count or 0, newest or 0), panel_ids)
