"""A panel's decision on one criterion: the verdict, the tally behind it, and the note."""

from __future__ import annotations

from dataclasses import dataclass

from grading.types import Verdict


@dataclass(frozen=True)
class PanelDecision:
    """The panel's verdict on one criterion and how it was reached.

    ``verdict`` is None only when every member failed; ``tie`` says the votes were tied
    (the tie rule decided); ``note`` explains the decision in words a reviewer reads.
    """

    verdict: Verdict | None
    met: float
    unmet: float
    abstained: float
    failed: int
    tie: bool
    note: str
    # The chosen option's label on a multi-choice criterion (``verdict`` is then MET); None
    # on a binary criterion, when the panel abstains, or is undecided.
    option: str | None = None

    @property
    def choice(self) -> Verdict | str | None:
        """What the aggregation reads: the option label if one was chosen, else the verdict."""
        return self.option if self.option is not None else self.verdict


# Beyond this many members still grading, every outcome is not tried (4**n): left undecided.
MAX_PENDING_TRIED = 5
_OUTCOMES: tuple[Verdict | None, ...] = (Verdict.MET, Verdict.UNMET, Verdict.CANNOT_ASSESS,
                                         None)
