"""A panel's stability for the trust report: its members' samples combined by the panel's
own rule, sample by sample, so that the figures say whether the panel would give the same
verdict if every member were asked again.

Panel sample ``s`` of a (response, criterion) is the panel rule (grading.panels, with the
panel's weights and tie rule) over each member's sample ``s``. A member's samples are its
run's own samples per criterion (run setting ``samples``), else the live runs of the same
model and grader (the member's run first, so sample 0 is the verdict the panel shows). The
panel has as many samples as its member with the fewest; below two, nothing is measured.
Disagreement between members is not instability (they are different judges, and the panel
exists to combine them): the Agreement page shows it as the members' agreement.

The panel is read through storage.services.panels.get_panel (members, rule, weights, tie
rule); its verdicts are the agreement report's.
"""

from __future__ import annotations

from dataclasses import dataclass

from grading.panels import combine_options, combine_verdicts
from storage.services import trust_samples
from storage.services.panels import PanelInfo
from storage.services.trust_frame import Frame, places, seen_of
from storage.services.trust_reads import Reads


@dataclass(frozen=True)
class PanelSamples:
    count: int  # panel samples measured (< 2: not measured)
    basis: str  # where they come from, in words (the page and the JSON)
    stability: list | None  # per criterion, prepared stability figures; None: not measured


class _Votes:
    """Every distinct choice the members gave, as a small integer (0: None, no verdict), so
    that a panel sample is a row of integers and each distinct row is decided once."""

    def __init__(self) -> None:
        self.choices: list = [None]
        self.index: dict = {None: 0}

    def code(self, choice) -> int:
        if choice not in self.index:
            self.index[choice] = len(self.choices)
            self.choices.append(choice)
        return self.index[choice]

    def matrix(self, verdicts, frame: Frame):
        """responses x criteria codes of a source's verdicts; 0 where it has none."""
        import numpy as np

        for choice in set(verdicts.values()):
            self.code(choice)
        rows, cols = places(verdicts, frame)
        codes = np.fromiter(map(self.index.__getitem__, verdicts.values()), dtype=np.int32,
                            count=len(verdicts))
        kept = (rows >= 0) & (cols >= 0)
        found = np.zeros((len(frame.positions), len(frame.columns)), dtype=np.int32)
        found[rows[kept], cols[kept]] = codes[kept]
        return found

    def stored(self, placed, frame: Frame):
        """``matrix`` of a source read from the database (``trust_stored``: per (criterion,
        verdict), its column and rows)."""
        import numpy as np

        found = np.zeros((len(frame.positions), len(frame.columns)), dtype=np.int32)
        for column, _cid, verdict, rows in placed:
            found[rows, column] = self.code(verdict)
        return found


def _member_samples(data, frame: Frame, reads: Reads, groups, votes: _Votes, run_id: int,
                    run_votes: dict) -> tuple[list, str]:
    """The member's samples, each a responses x criteria array of vote codes (``votes``;
    0: failed or no verdict), and how they were found, in words. ``run_votes``: the runs'
    vote codes made so far (members share runs as samples: each is coded once)."""
    import numpy as np

    within = reads.within.get(run_id)
    if within is not None:
        count = within.count
        found = [np.zeros((len(frame.positions), len(frame.columns)), dtype=np.int32)
                 for _ in range(count)]
        seen = seen_of(data, frame, f"run:{run_id}")
        for column, _cid, choices, rows in trust_samples.placed(frame, within, seen):
            for s in range(count):
                found[s][rows, column] = votes.code(
                    (choices[s] or None) if s < len(choices) else None)
        return found, f"run #{run_id}: {count} samples per criterion"
    live, _gone = groups.get(f"run:{run_id}", ((run_id,), ()))
    runs = [run_id, *(r for r in live if r != run_id)] if run_id in live else [run_id]
    for r in runs:
        if r not in run_votes:
            run_votes[r] = (votes.matrix(data.verdicts.get(f"run:{r}", {}), frame)
                            if frame.stored is None
                            else votes.stored(frame.stored.placed(f"run:{r}", frame), frame))
    found = [run_votes[r] for r in runs]
    if len(runs) == 1:
        return found, f"run #{run_id}: one sample"
    return found, f"run #{run_id}: runs {', '.join(f'#{r}' for r in runs)}"


def panel_samples(data, frame: Frame, reads: Reads, groups, key: str,
                  panel: PanelInfo) -> PanelSamples:
    count, basis, stacked = panel_codes(data, frame, reads, groups, key, panel)
    return PanelSamples(count=count, basis=basis, stability=None if stacked is None
                        else trust_samples.by_criterion(frame, stacked))


def panel_codes(data, frame: Frame, reads: Reads, groups, key: str, panel: PanelInfo):
    """The panel's samples measured, their basis in words, and their responses x criteria
    x samples codes (-1: no decided verdict; None below two samples)."""
    votes, run_votes = _Votes(), {}
    members = [_member_samples(data, frame, reads, groups, votes, member.run.id, run_votes)
               for member in panel.members]
    count = min(len(samples) for samples, _how in members)
    basis = (f"the panel's rule ({panel.rule}) over its members' samples, sample by "
             f"sample: {'; '.join(how for _samples, how in members)} — {count} panel "
             f"sample{'s' if count != 1 else ''} (the fewest any member has)")
    if count < 2:
        return count, basis, None
    weights = ([member.weight for member in panel.members] if panel.rule == "weighted"
               else None)
    return count, basis, combined_codes(
        data, frame, seen_of(data, frame, key),
        [samples[:count] for samples, _how in members], votes, panel.rule, weights,
        panel.tie_rule)


def combined_codes(data, frame: Frame, seen, members: list[list], votes: _Votes, rule: str,
                   weights, tie_rule):
    """responses x criteria x samples codes of the panel's rule over its members' samples
    (``members``: per member, per sample, vote codes), where the panel has a verdict the
    viewer sees (``seen``); -1 elsewhere and where the panel decided nothing. Each distinct
    row of votes is decided once."""
    import numpy as np

    criteria = {c.id: c for c in data.criteria}
    count, size = len(members[0]), len(votes.choices)
    stacked = np.full((len(frame.positions), len(frame.columns), count), -1, dtype=np.int32)
    for cid, j in frame.columns.items():
        rows = np.nonzero(seen[:, j])[0]
        if not len(rows):
            continue
        # (samples x rows) x members
        table = np.stack([np.stack([member[s][rows, j] for s in range(count)])
                          for member in members], axis=-1).reshape(-1, len(members))
        distinct, inverse = _distinct_rows(table, size)
        criterion = criteria[cid]
        rubric = criterion.to_criterion() if criterion.is_multi_choice else None
        decided = []
        for row in distinct:
            cast = tuple(votes.choices[v] for v in row)
            if rubric is not None:
                choice = combine_options(cast, rubric).choice
            else:
                choice = combine_verdicts(
                    cast, rule,  # type: ignore[arg-type]
                    criterion_weight=criterion.weight, weights=weights,
                    tie_rule=tie_rule).verdict  # type: ignore[arg-type]
            decided.append(frame.codes.get((cid, choice), -1))
        stacked[rows, j, :] = np.asarray(decided, dtype=np.int32)[inverse].reshape(
            count, len(rows)).T
    return stacked


def _distinct_rows(table, size: int):
    """The distinct rows of ``table`` (codes below ``size``) as lists, and each row's index
    among them: each row read as one number in base ``size`` when the numbers fit a
    table of flags (a few members: a few hundred numbers), else numpy's row sort."""
    import numpy as np

    members = table.shape[1]
    if size ** members > 1 << 20:
        distinct, inverse = np.unique(table, axis=0, return_inverse=True)
        return distinct.tolist(), inverse.reshape(-1)
    keys = table.astype(np.int64) @ (size ** np.arange(members, dtype=np.int64))
    used = np.zeros(size ** members, dtype=bool)
    used[keys] = True
    found = np.nonzero(used)[0]
    index = np.zeros(size ** members, dtype=np.int64)
    index[found] = np.arange(len(found))
    digits = (found[:, None] // size ** np.arange(members)) % size
    return digits.tolist(), index[keys]
