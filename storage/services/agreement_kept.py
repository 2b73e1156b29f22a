"""The Agreement report kept between saved verdicts, patched response by response (issue 41).

A saved verdict changes people's side of the report on one response only, while the
report (``agreement.agreement_report`` with the judges' share of the count kept) re-read
every reviewed response's verdicts, every reviewer's, the runs' and the panels'. So the
page keeps a ``KeptReport``: the report, and per reviewed response its rows of the pattern
count (every source's over it, less the judges' alone: ``agreement_judge_counts``). When the
data stamp moved by appended human verdicts only (their count grew by exactly the rows
newer than the newest seen: human verdicts are append-only, adjudications and carried
verdicts included, ``HumanVerdictRow``), ``advance`` re-reads only the responses those
verdicts are on: their verdicts in force, each reviewer's current verdicts, their human
scores, their rows of the count, and the judges' verdicts of a response reviewed for the
first time; the rest of the report is the kept one's. Grades landed are followed the same
way when the judges' inputs in hand were advanced over them from the kept report's
(``agreement_inputs.advanced`` says how the judges' rows moved): the reviewed responses
graded again are read again, the judges' sources and scores are the inputs'. Anything
else (a panel filled, a run added, a deletion, people's first verdict, inputs made anew or
read back from another process, a write while reading) gives None: the caller builds the
report anew (``build``, or ``agreement_report``).

Every figure is the one ``build_report(gather_sources(...))`` gives, and the data is what
``agreement_report`` holds, dicts in the same order (tests/storage/test_agreement_kept.py).
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from sqlalchemy import Select, select

from grading.types import ScoringSettings
from storage import models as m
from storage.convert import run_info
from storage.engine import SessionFactory
from storage.gc_pause import collection_paused
from storage.plain_rows import plain_rows
from storage.repositories import effective as effective_repo
from storage.repositories import runs as run_repo
from storage.services import (
    agreement,
    agreement_counts,
    agreement_people_store,
    agreement_touched,
    calibration,
    panels,
)
from storage.services.agreement import HUMAN, AgreementData, AgreementReport
from storage.services.agreement_folded import FoldedRows
from storage.services.agreement_inputs import JudgeInputs, judges_folded
from storage.services.agreement_judge_counts import JudgePatterns, judge_stamp
from storage.services.agreement_sides import CODES, RANK, side_of, unit_rows_query
from storage.services.agreement_sources import (
    data_stamp,
    gather_people,
    judge_sources,
    with_counts,
)
from storage.services.agreement_touched import Touched
from storage.services.unit_pack import PackedUnits

Row = tuple  # a pattern row without its count: (criterion, codes..., response, rank)


@dataclass(frozen=True)
class KeptReport:
    """A counted report and what patching it needs. Never mutated: ``advance`` makes a
    new one (older reports stay valid for whoever holds them)."""

    rubric_version_id: int
    dataset_id: int
    stamp: tuple  # ``data_stamp`` the report describes
    report: AgreementReport
    judges: JudgePatterns
    keys: tuple[str, ...]  # the count's sources (people first) and alpha's voters among them
    voters: tuple[int, ...]
    reviewed: frozenset[int]  # responses with rows in effective_verdicts (judges' held)
    scorings: dict[str, ScoringSettings]  # judge source key -> its scoring settings
    excluded: dict[str, frozenset[int]]  # judge source key -> responses shown as examples
    newest: dict[str, int]  # reviewer -> id of their newest current verdict
    units: PackedUnits  # reviewed response -> its share of the count's rows
    folded: FoldedRows  # the whole count's rows folded as the report sums them


class KeptSlot:
    """One set's kept report, shared by whoever reads it (the page's sessions): brought up
    to date under a lock, so two readers do not patch or build it twice at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: KeptReport | None = None

    def report(self, sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
               judges: JudgePatterns | JudgeInputs | None,
               patterns: Callable[[], JudgePatterns | None] | None = None) -> AgreementReport:
        """The report now: the kept one patched, built anew, or (when it cannot be kept)
        ``agreement.agreement_report``'s. ``judges`` as ``build`` takes them; ``patterns``:
        the judges' count, when ``judges`` are their inputs (what the whole report reads
        when it cannot be kept)."""
        with self._lock:
            # let go of the kept report before a new one is built: at 100,000 responses
            # the two side by side were ~150 MB more at the app's peak (a grade landed)
            kept, self._kept = self._kept, None
            found = None if kept is None else advanced(sessions, rubric_version_id,
                                                       dataset_id, kept, judges)
            del kept
            self._kept = (found if found is not None
                          else build(sessions, rubric_version_id, dataset_id, judges))
            if self._kept is not None:
                return self._kept.report
        if isinstance(judges, JudgeInputs):
            judges = patterns() if patterns is not None else None
        return agreement.agreement_report(sessions, rubric_version_id, dataset_id,
                                          judges=judges)

    def kept_of(self, report: AgreementReport) -> KeptReport | None:
        """The kept report whose report is ``report`` (None: it was not kept, or the slot
        has moved on since)."""
        with self._lock:
            kept = self._kept
        return kept if kept is not None and kept.report is report else None


def advanced(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
             kept: KeptReport, judges: JudgePatterns | JudgeInputs | None) -> KeptReport | None:
    """``kept`` patched up to date (``advance``) when it is this set's; None when it must
    be built anew."""
    if (kept.rubric_version_id, kept.dataset_id) != (rubric_version_id, dataset_id):
        return None
    return advance(sessions, kept, judges)


def build(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
          judges: JudgePatterns | JudgeInputs | None) -> KeptReport | None:
    """The counted report read whole, with its count kept per reviewed response; None when
    it is not counted with the judges' share (a multi-choice rubric, an unsettled panel, no
    people or no judge, a judge's stamp moved, anything written while reading).
    ``judges``: their pattern count, or their inputs made at their stamp (the count already
    folded and their grades: storage.services.agreement_inputs), the same report either way.
    Built with the garbage collector paused (storage.gc_pause: what it allocates stays)."""
    with collection_paused():
        return _build(sessions, rubric_version_id, dataset_id, judges)


def _build(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
           judges: JudgePatterns | JudgeInputs | None) -> KeptReport | None:
    before = data_stamp(sessions, rubric_version_id, dataset_id)
    if judges is None or judges.stamp != judge_stamp(before):
        return None
    if not agreement_counts.countable(sessions, rubric_version_id, dataset_id):
        return None
    inputs = judges if isinstance(judges, JudgeInputs) else None
    # people's rows kept in the database at this very stamp (with the judges' inputs only:
    # the runs' verdicts kept are those whose grades the inputs hold)
    people = (None if inputs is None else
              agreement_people_store.people_stamp(sessions, rubric_version_id, dataset_id,
                                                  before))
    rows = (None if people is None else
            agreement_people_store.read_stored(
                sessions, rubric_version_id, dataset_id, people,
                # the inputs advanced over grades landed: people's rows follow them
                None if inputs.since is None else (inputs.since.stamp, inputs.stamp,
                                                   inputs.since.response_ids)))
    data, newest, made = gather_people(sessions, rubric_version_id, dataset_id,
                                       complete=False,
                                       stored=None if inputs is None else inputs.grades,
                                       rows=rows, judge_reasons=False)
    if not data.verdicts.get(HUMAN):
        return None
    sides, voters = agreement_counts.count_sides(sessions, data)
    keys = list(sides)
    if (keys != [s.key for s in data.verdict_sources]
            or not agreement_counts.kept_judges_fit(data, judges, keys, voters)):
        return None
    reviewed_query = effective_repo.reviewed_ids_query(rubric_version_id, dataset_id)
    with sessions() as session:
        reviewed = frozenset(session.scalars(reviewed_query))
    units = (None if inputs is None else
             _units_of_data(data, keys, voters, inputs.folded, reviewed))
    from_data = units is not None
    if units is None:
        units = _units(sessions, judges, [sides[k] for k in keys], voters,
                       reviewed_query.order_by(None))
    scorings, excluded = _judge_settings(sessions, rubric_version_id, dataset_id, data)
    # the judges' count folded (made now from their rows, or kept with their inputs) and
    # people's units patched in, as ``advance`` patches a saved verdict's
    judges_only = inputs.folded if inputs is not None else judges_folded(judges)
    change: Counter = Counter()
    for share in units.values():
        change.update(share)
    folded = _patched(judges_only, change,
                      _judges_before(judges_only, change) if from_data else None)
    if folded is None:
        return None  # as combined_rows: not a count of these verdicts
    report = counted_report(data, keys, folded)
    if report is None or data_stamp(sessions, rubric_version_id, dataset_id) != before:
        return None
    if people is not None and rows is None and agreement_people_store.people_stamp(
            sessions, rubric_version_id, dataset_id, before) == people:
        # made at ``people`` (nothing moved while reading): kept for the next process;
        # a busy database only means the next one reads the rows again
        agreement_people_store.store(sessions, rubric_version_id, dataset_id, people, made)
    return KeptReport(rubric_version_id, dataset_id, before, report, judges, tuple(keys),
                      tuple(voters), reviewed, scorings, excluded, newest,
                      PackedUnits.of(units, len(keys) + 3), folded)


def _patched(folded: FoldedRows, change: Counter,
             before: dict | None = None) -> FoldedRows | None:
    """``folded`` after the rows' counts moved by ``change`` from ``before`` (default: the
    folded count's own, ``counts_of``); None if a row's count would go below 0 or a unit
    to take out is not there (not a count of these verdicts)."""
    if before is None:
        moved = [row for row, n in change.items() if n]
        before = dict(zip(moved, folded.counts_of(moved), strict=True))
    if any(had + change[row] < 0 for row, had in before.items()):
        return None
    try:
        return folded.patched(change, before)
    except ValueError:
        return None


def _judges_before(judges: FoldedRows, change: Counter) -> dict:
    """The counts the judges' folded count holds of people's units' rows made by
    ``_units_of_data``, without looking each unit up: a unit of theirs it takes out is one
    of its own (its rank was read from them), one it puts in is people's first (none of
    the judges' is); any other row is its pattern's."""
    width = judges.width
    return {row: (judges.coded.get((row[0], tuple(row[1:1 + width])), 0) if row[-2] is None
                  else int(row[1] is None))
            for row, n in change.items() if n}


def advance(sessions: SessionFactory, kept: KeptReport,
            judges: JudgePatterns | JudgeInputs | None) -> KeptReport | None:
    """``kept`` after the human verdicts appended since, re-reading only the responses they
    are on, and after the grades landed since when ``judges`` are the judges' inputs
    advanced over them from ``kept``'s (``agreement_inputs.advanced``: how the judges' rows
    moved, and on which responses); ``kept`` itself when nothing moved; None when more
    than that moved (or the judges were made anew): then it is built anew."""
    version_id, dataset_id = kept.rubric_version_id, kept.dataset_id
    stamp = data_stamp(sessions, version_id, dataset_id)
    if stamp == kept.stamp:
        return kept
    landed = _landed(kept, judges, stamp)
    if landed is None:
        return None
    graded, moved = landed
    (count, newest_id), (kept_count, kept_newest) = stamp[1], kept.stamp[1]
    appended = []
    if (count, newest_id) != (kept_count, kept_newest):
        hv = m.HumanVerdictRow
        with sessions() as session:
            appended = session.execute(
                select(hv.id, hv.response_id)
                .join(m.ResponseRow, m.ResponseRow.id == hv.response_id)
                .where(m.ResponseRow.dataset_id == dataset_id, hv.id > kept_newest,
                       hv.id <= newest_id)).all()
        if not appended:
            return None
    if kept_count + len(appended) != count:
        return None  # rows went away (or came back under old ids): read the report anew
    again = frozenset(graded) & kept.reviewed  # reviewed responses graded again
    touched = sorted({rid for _vid, rid in appended} | again)
    fresh = agreement_touched.read_touched(sessions, kept, touched, again)
    data = _patched_data(kept, fresh, again)
    if data is not None and moved is not None:
        data = _judges_moved(sessions, kept, data, judges)
    if data is None:
        return None
    change: Counter = Counter(moved or {})
    for rid in touched:
        change.subtract(kept.units.get(rid, Counter()))
    new_units = _units(sessions, kept.judges, [side_of(data, key) for key in kept.keys],
                       kept.voters, sorted(fresh.reviewed)) if fresh.reviewed else {}
    for share in new_units.values():
        change.update(share)
    units = kept.units.replaced(touched, new_units)
    folded = _patched(kept.folded, change)
    if folded is None:
        return None  # not the count of these verdicts: read the report anew
    report = counted_report(data, list(kept.keys), folded)
    if report is None or data_stamp(sessions, version_id, dataset_id) != stamp:
        return None
    return replace(kept, stamp=stamp, report=report, reviewed=kept.reviewed | fresh.reviewed,
                   newest=fresh.newest, units=units, folded=folded,
                   judges=kept.judges if moved is None else judges)


def _landed(kept: KeptReport, judges: JudgePatterns | JudgeInputs | None,
            stamp: tuple) -> tuple[tuple[int, ...], Counter | None] | None:
    """The responses grades landed on since ``kept`` and how the judges' rows moved
    (``()``, None: no grade landed); None when the judges moved otherwise, or their inputs
    were not advanced from ``kept``'s over those grades."""
    if judges is None or (judges.keys, judges.voters) != (kept.judges.keys,
                                                          kept.judges.voters):
        return None
    if judge_stamp(stamp) == judge_stamp(kept.stamp):
        return ((), None) if judges.stamp == kept.judges.stamp else None
    since = judges.since if isinstance(judges, JudgeInputs) else None
    if (since is None or judges.stamp != judge_stamp(stamp)
            or since.stamp != kept.judges.stamp or kept.judges.stamp != judge_stamp(kept.stamp)):
        return None
    return since.response_ids, since.moved


def _judges_moved(sessions: SessionFactory, kept: KeptReport, data: AgreementData,
                  inputs: JudgeInputs) -> AgreementData | None:
    """``data`` with the judges' sources (their grades, tokens, cost, status) and scores as
    they are after grades landed (their verdicts on the reviewed responses are patched
    already); None when the sources or their settings are not the kept report's."""
    found = judge_sources(sessions, kept.rubric_version_id, kept.dataset_id, inputs.grades)
    if found is None:
        return None
    sources, scores = found
    if [s.key for s in sources] != [s.key for s in data.sources if not s.is_human]:
        return None
    settings = _judge_settings(sessions, kept.rubric_version_id, kept.dataset_id, data)
    if settings != (kept.scorings, kept.excluded):
        return None  # a run's scoring or its examples changed: read the report anew
    people = tuple(s for s in data.sources if s.is_human)
    return replace(data, sources=people + sources, judge_scores=scores)


def counted_report(data: AgreementData, keys: list[str],
                    folded: FoldedRows) -> AgreementReport | None:
    """The report from the whole count's rows, checked as ``agreement_report`` checks it."""
    counted = agreement_counts.counts_from_folded(data, keys, folded)
    data = with_counts(data, counted.totals)
    people_pairs = not data.reviewer_verdicts or any(s.is_human for s in data.verdict_sources)
    if not counted.covers(data) or not people_pairs:
        return None
    return agreement.build_report(data, counted.pairwise, agreement.criterion_kinds(
        data.criteria), alpha=counted.alpha, patterns=counted.patterns)


def _units(sessions: SessionFactory, judges: JudgePatterns | JudgeInputs,
           sides: Sequence[Select],
           voters: Sequence[int], within) -> dict[int, Counter]:
    """Per response of ``within`` (a query of response ids, or ids): its rows of the whole
    count less the judges' alone (``agreement_judge_counts.combined_rows``, by response)."""

    def limited(side: Select) -> Select:
        return side.where(side.selected_columns.response_id.in_(within))

    # One count: each unit's row of the judges alone follows from its row of every source
    # (their codes, and their first rank: ``also``), as their own count would give it.
    judge_voters = list(judges.voters)
    with sessions() as session:
        every = plain_rows(session.connection(), unit_rows_query(
            [limited(s) for s in sides], voters, also=judge_voters))
    units: dict[int, Counter] = defaultdict(Counter)
    for row in every:
        *whole, first_alone, rid = row
        share = units[rid]
        share[tuple(whole)] += 1
        codes = whole[2:-2]  # the judges' (people's is whole[1])
        if not any(code is not None for code in codes):
            continue  # no judge answered: not a unit of theirs
        cast = [whole[1 + i] for i in judge_voters if whole[1 + i] is not None]
        disagree = 1 in cast and 2 in cast
        share[(whole[0], None, *codes, rid if disagree else None,
               first_alone if disagree else None)] -= 1
    return {rid: Counter({r: n for r, n in share.items() if n})
            for rid, share in units.items()}


def _units_of_data(data: AgreementData, keys: Sequence[str], voters: Sequence[int],
                   judges_count: FoldedRows, reviewed: frozenset[int]
                   ) -> dict[int, Counter] | None:
    """``_units`` from what ``data`` holds already (people's verdicts and the judges' on
    the reviewed responses) and the judges' folded count, without counting the reviewed
    responses again. A key people answered is one unit of every source (people first: its
    rank is people's, the criterion id) less the judges' own unit (its rank is the judges'
    folded one); a key people did not answer is the judges' unit twice, once each way: no
    share. None where ``data`` cannot say (a verdict the count does not code, a judges'
    unit not in their count): then they are counted (``_units``)."""
    import numpy as np

    if list(keys[:1]) != [HUMAN] or list(voters[:1]) != [0]:
        return None
    people = data.verdicts.get(HUMAN, {})
    judged = [data.verdicts.get(key, {}) for key in keys[1:]]
    judge_voters = [i - 1 for i in voters[1:]]  # places among the judges' codes
    units_array = judges_count.units
    near = units_array[np.isin(units_array[:, 1], np.fromiter(
        reviewed, dtype=np.int64, count=len(reviewed)))]
    ranks = {(rid, cid): first * RANK + place
             for first, rid, place, cid, _met, _unmet in near.tolist()}
    units: dict[int, Counter] = defaultdict(Counter)
    codes_of = CODES
    for key, verdict in people.items():
        mine = codes_of.get(verdict)
        if mine is None:
            return None
        codes = []
        for found in judged:
            choice = found.get(key)
            code = None if choice is None else codes_of.get(choice)
            if choice is not None and code is None:
                return None
            codes.append(code)
        rid, cid = key
        cast = [codes[i] for i in judge_voters if codes[i] is not None]
        judges_disagree = 1 in cast and 2 in cast
        disagree = judges_disagree or (mine == 1 and 2 in cast) or (mine == 2 and 1 in cast)
        share = units[rid]
        share[(cid, mine, *codes, rid if disagree else None, cid if disagree else None)] += 1
        if any(code is not None for code in codes):
            rank = ranks.get(key)
            if judges_disagree != (rank is not None):
                return None
            share[(cid, None, *codes, rid if judges_disagree else None, rank)] -= 1
    return {rid: Counter({r: n for r, n in share.items() if n})
            for rid, share in units.items()}


def _judge_settings(sessions: SessionFactory, rubric_version_id: int, dataset_id: int,
                    data: AgreementData) -> tuple[dict[str, ScoringSettings],
                                                  dict[str, frozenset[int]]]:
    """Each judge source's scoring settings and the responses it leaves out (shown as
    examples), as ``gather_sources`` took them."""
    scorings: dict[str, ScoringSettings] = {}
    members: dict[str, list[int]] = {}
    with sessions() as session:
        for run in run_repo.list_runs(session, rubric_version_id=rubric_version_id,
                                      dataset_id=dataset_id):
            scorings[f"run:{run.id}"] = run_info(run).settings.scoring()
            members[f"run:{run.id}"] = [run.id]
        used = calibration.example_response_ids(
            session, [rid for ids in members.values() for rid in ids])
    for panel in panels.list_panels(sessions, dataset_id=dataset_id,
                                    rubric_version_id=rubric_version_id):
        if panel.ready:
            scorings[f"panel:{panel.id}"] = panel.scoring
            members[f"panel:{panel.id}"] = [member.run.id for member in panel.members]
    excluded = {key: frozenset().union(*(used.get(rid, set()) for rid in ids))
                for key, ids in members.items()}
    return ({k: v for k, v in scorings.items() if k in data.human_scores},
            {k: v for k, v in excluded.items() if k in data.human_scores})


def _patched_data(kept: KeptReport, fresh: Touched,
                  again: frozenset[int] = frozenset()) -> AgreementData | None:
    """The kept report's data with the touched responses' people (and the judges of those
    reviewed for the first time, or graded ``again``) replaced; None where patching is not
    enough."""
    data = kept.report.data
    touched = fresh.touched
    humans = {(h.response_id, h.criterion_id): h for h in fresh.applied}
    verdicts = dict(data.verdicts)
    reasons = dict(data.reasons)
    criteria = [c.id for c in data.criteria]

    def keys_of(rid: int) -> list[tuple[int, int]]:
        return [(rid, cid) for cid in criteria]

    verdicts[HUMAN] = merged(data.verdicts[HUMAN], {k: h.choice for k, h in humans.items()},
                             touched, keys_of=keys_of)
    reasons[HUMAN] = merged(data.reasons[HUMAN], {k: h.note for k, h in humans.items()},
                            touched, keys_of=keys_of)
    if not verdicts[HUMAN]:
        return None
    new = set(fresh.reviewed - kept.reviewed) | (again & fresh.reviewed)
    for key, choices in fresh.judges.items():
        verdicts[key] = merged(data.verdicts.get(key, {}), choices, new)
    own: dict[str, dict] = defaultdict(dict)
    seconds: dict[str, dict[int, float]] = defaultdict(dict)
    names = dict(data.reviewer_names)
    for h in fresh.own:
        own[h.reviewer_key][h.response_id, h.criterion_id] = h.choice
        if h.review_seconds is not None:
            spent = seconds[h.reviewer_key]
            spent[h.response_id] = max(spent.get(h.response_id, 0.0), h.review_seconds)
        if fresh.newest.get(h.reviewer_key) == h.id:
            names[h.reviewer_key] = h.reviewer
    per_reviewer = _by_first({
        key: merged(data.reviewer_verdicts.get(key, {}), own.get(key, {}), touched,
                    keys_of=keys_of)
        for key in [*data.reviewer_verdicts, *(k for k in own if k not in
                                                data.reviewer_verdicts)]})
    spent = _by_first({
        key: merged(data.reviewer_seconds.get(key, {}), seconds.get(key, {}), touched,
                    response=_itself, keys_of=_alone)
        for key in [*data.reviewer_seconds, *(k for k in seconds if k not in
                                               data.reviewer_seconds)]})
    if set(names) != set(per_reviewer):
        return None  # a reviewer with no current verdict left: not an append
    people = {rid for rid, _cid in verdicts[HUMAN]}
    by_settings: dict[str, dict[int, float]] = {}
    human_scores = {}
    for key, scoring in kept.scorings.items():
        json = scoring.model_dump_json()
        if json not in by_settings:
            by_settings[json] = merged(data.human_scores[key], fresh.human_scores[json],
                                       touched, response=_itself, keys_of=_alone)
        human_scores[key] = by_settings[json]
    counts = Counter(rid for rid, _cid in verdicts[HUMAN])
    whole = sum(1 for n in counts.values() if n == len(data.criteria))
    held_out = {key: calibration.HeldOut.of(found.k, people, set(kept.excluded[key]))
                for key, found in data.held_out.items()}
    sources = tuple(replace(s, verdict_count=len(verdicts[HUMAN])) if s.is_human else s
                    for s in data.sources)
    return replace(data, sources=sources, verdicts=verdicts, reasons=reasons,
                   human_scores=human_scores, reviewed_responses=len(people),
                   fully_reviewed_responses=whole, reviewer_verdicts=per_reviewer,
                   reviewer_names={k: names[k] for k in per_reviewer},
                   reviewer_seconds=spent, held_out=held_out)


def _itself(rid: int) -> int:
    return rid


def _alone(rid: int) -> list[int]:
    return [rid]


def _by_first(per: dict[str, dict]) -> dict[str, dict]:
    """Non-empty entries, in the order of their first key (``gather_sources`` meets
    reviewers response by response)."""
    kept = {key: found for key, found in per.items() if found}
    return dict(sorted(kept.items(), key=lambda item: next(iter(item[1]))))


def merged(old: dict, fresh: dict, touched: Iterable[int],
           response=lambda key: key[0], keys_of=None) -> dict:
    """``old`` (ordered by response) without the ``touched`` responses' entries and with
    ``fresh``'s (theirs, ordered by response) in their place, in response order.
    ``keys_of``: a response's possible keys; when the touched responses keep the very keys
    they had (a changed verdict), their values are replaced where they stand (the order
    within a response follows its keys)."""
    touched = set(touched)
    if not touched:
        return old
    if keys_of is not None:
        before = {key for rid in touched for key in keys_of(rid) if key in old}
        if before == set(fresh) and all(response(key) in touched for key in fresh):
            out = dict(old)
            out.update(fresh)
            return out
    pending: dict[int, list] = defaultdict(list)
    for key, value in fresh.items():
        pending[response(key)].append((key, value))
    waiting = sorted(set(pending) | touched)
    out: dict = {}
    i = 0
    for key, value in old.items():
        rid = response(key)
        while i < len(waiting) and waiting[i] <= rid:
            out.update(pending.get(waiting[i], ()))
            i += 1
        if rid not in touched:
            out[key] = value
    for rid in waiting[i:]:
        out.update(pending.get(rid, ()))
    return out
