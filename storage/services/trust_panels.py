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
from storage.services.trust_frame import Frame
from storage.services.trust_reads import Reads

_UNSEEN = object()


@dataclass(frozen=True)
class PanelSamples:
    count: int  # panel samples measured (< 2: not measured)
    basis: str  # where they come from, in words (the page and the JSON)
    stability: list | None  # per criterion, prepared stability figures; None: not measured


def _member_samples(data, reads: Reads, groups, run_id: int
                    ) -> tuple[list[dict], str]:
    """The member's samples, each {(response, criterion): choice (None: failed)}, and how
    they were found, in words."""
    seen = data.verdicts.get(f"run:{run_id}", {})
    within = reads.within.get(run_id)
    if within is not None:
        count, stored = within
        found = [{key: (choices[s] or None) if s < len(choices) else None
                  for key, choices in stored.items() if key in seen} for s in range(count)]
        return found, f"run #{run_id}: {count} samples per criterion"
    live, _gone = groups.get(f"run:{run_id}", ((run_id,), ()))
    runs = [run_id, *(r for r in live if r != run_id)] if run_id in live else [run_id]
    found = [data.verdicts.get(f"run:{r}", {}) for r in runs]
    if len(runs) == 1:
        return found, f"run #{run_id}: one sample"
    return found, f"run #{run_id}: runs {', '.join(f'#{r}' for r in runs)}"


def panel_samples(data, frame: Frame, reads: Reads, groups, key: str,
                  panel: PanelInfo) -> PanelSamples:
    members = [_member_samples(data, reads, groups, member.run.id)
               for member in panel.members]
    count = min(len(samples) for samples, _how in members)
    basis = (f"the panel's rule ({panel.rule}) over its members' samples, sample by "
             f"sample: {'; '.join(how for _samples, how in members)} — {count} panel "
             f"sample{'s' if count != 1 else ''} (the fewest any member has)")
    if count < 2:
        return PanelSamples(count=count, basis=basis, stability=None)
    criteria = {c.id: c for c in data.criteria}
    rubric = {c.id: c.to_criterion() for c in data.criteria if c.is_multi_choice}
    weights = ([member.weight for member in panel.members] if panel.rule == "weighted"
               else None)
    decided: dict[tuple, object] = {}

    def decide(cid: int, votes: tuple) -> object:
        found = decided.get((cid, votes), _UNSEEN)
        if found is _UNSEEN:
            if cid in rubric:
                found = combine_options(votes, rubric[cid]).choice
            else:
                found = combine_verdicts(
                    votes, panel.rule,  # type: ignore[arg-type]
                    criterion_weight=criteria[cid].weight, weights=weights,
                    tie_rule=panel.tie_rule).verdict  # type: ignore[arg-type]
            decided[cid, votes] = found
        return found

    seen = data.verdicts.get(key, {})
    member_lists = [samples for samples, _how in members]
    combined = {
        (rid, cid): [decide(cid, tuple(samples[s].get((rid, cid)) for samples in member_lists))
                     for s in range(count)]
        for rid, cid in seen}
    stacked = trust_samples.stack_choices(frame, seen, count, combined)
    return PanelSamples(count=count, basis=basis,
                        stability=trust_samples.by_criterion(frame, stacked))
