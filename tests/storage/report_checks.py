"""A counted Agreement report (``AgreementData.complete`` False: the judges' verdicts of the
reviewed responses only) against the report computed from every verdict."""

from __future__ import annotations

from dataclasses import replace

from storage.services.agreement import HUMAN, AgreementData, AgreementReport


def held(data: AgreementData) -> AgreementData:
    """Complete data as a counted report holds it: the judges' verdicts of the responses
    someone reviewed, none of their reasons (the disagreement list reads those it lists);
    people's verdicts and notes, scores and counts untouched."""
    reviewed = {rid for per in data.reviewer_verdicts.values() for rid, _cid in per}

    def kept(key: str, per: dict) -> dict:
        return per if key == HUMAN else {k: v for k, v in per.items() if k[0] in reviewed}

    return replace(data, complete=False,
                   verdicts={key: kept(key, per) for key, per in data.verdicts.items()},
                   reasons={HUMAN: data.reasons[HUMAN]} if HUMAN in data.reasons else {})


def assert_same_report(counted: AgreementReport, python: AgreementReport) -> None:
    """Every figure of ``counted`` is ``python``'s, and it holds what ``held`` keeps."""
    assert not counted.data.complete and python.data.complete
    assert counted.data == held(python.data)
    assert replace(counted, data=python.data) == python
