"""AppTest: the Agreement page keeps the trust report's judges' share (issue 41) while only
people's verdicts change, and makes it again when a run is added."""

from __future__ import annotations

from storage.services import reviews, trust_report
from storage.services.reviewers import local_actor
from tests.storage import trust_seed
from tests.ui.pages import agreement_tab, open_page, unescape
from tests.weak_results import watch_results


def _text(at) -> str:
    return "\n".join(unescape(str(m.value)) for m in [*at.markdown, *at.caption])


def test_a_saved_verdict_keeps_the_judges_share_and_a_new_run_makes_it_again(
        sessions, monkeypatch):
    from ui import agreement_readers

    world = trust_seed.seed(sessions)
    made = _count_made(monkeypatch, agreement_readers)
    at = agreement_tab(open_page("agreement", timeout=120), "Trust a judge")
    assert len(made) == 1
    a1 = f"run:{world.runs['a1']}"

    # a second reviewer disagrees with ana on a sampled response: people's part moves
    rid = world.sample[0]
    accurate = "UNMET" if world.human[rid][0] == "MET" else "MET"
    reviews.set_human_verdict(sessions, actor=local_actor("cy"), response_id=rid,
                              criterion_id=world.criterion_ids[0], verdict=accurate)
    agreement_readers.get_stamp.clear()  # as 5 s later: the page sees the verdict
    at.run()
    assert not at.exception, at.exception
    assert len(made) == 1  # the judges' share kept
    fresh = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    assert fresh.judge(a1).verdict in _text(at)
    assert len(made) == 2  # (the fresh report's own)

    added = trust_seed.copy_run(sessions, world, "b", "openai/judge-c")
    agreement_readers.get_stamp.clear()
    at.run()
    assert not at.exception, at.exception
    assert len(made) == 3  # a run added: made again
    assert f"run:{added}" in at.selectbox(key="agreement_trust_judge").options or any(
        f"#{added}" in option for option in at.selectbox(key="agreement_trust_judge").options)


def test_a_new_app_process_reads_the_judges_share_the_first_one_stored(sessions, monkeypatch):
    """The share is kept in the database (storage.services.trust_share_store): a process
    whose in-process caches are empty shows the same trust report without making it."""
    from ui import agreement_readers

    world = trust_seed.seed(sessions)
    made = _count_made(monkeypatch, agreement_readers)
    first = agreement_tab(open_page("agreement", timeout=120), "Trust a judge")
    assert not first.exception, first.exception
    assert len(made) == 1

    for reader in (agreement_readers.get_trust_judges, agreement_readers.get_trust,
                   agreement_readers.get_full_report, agreement_readers.get_kept_slot,
                   agreement_readers.get_judge_patterns, agreement_readers.get_stamp):
        reader.clear()  # as a new process: nothing kept in memory
    at = agreement_tab(open_page("agreement", timeout=120), "Trust a judge")
    assert not at.exception, at.exception
    assert len(made) == 1  # read from the database
    a1 = f"run:{world.runs['a1']}"
    fresh = trust_report.trust_report(sessions, world.version_id, world.dataset_id)
    assert fresh.judge(a1).verdict in _text(at)
    assert _text(at) == _text(first)


def test_a_moved_judges_stamp_lets_go_of_the_share_before_its_tab_is_opened_again(
        sessions, monkeypatch):
    """The share of the judges' stamp before is not kept beside the new report's making
    (~20 MB at 100,000 responses): dropped when the new stamp's report is made, on
    whichever section is open, and made again when the trust tab is."""
    import gc

    from ui import agreement_readers

    world = trust_seed.seed(sessions)
    shares = watch_results(monkeypatch, trust_report, "judges_part")
    agreement_readers.get_trust_judges.clear()
    at = agreement_tab(open_page("agreement", timeout=120), "Trust a judge")
    agreement_tab(at, "Criteria")
    gc.collect()
    assert len(shares) == 1 and shares[0]() is not None  # kept while the judges stay

    trust_seed.copy_run(sessions, world, "b", "openai/judge-c")  # the judges' stamp moves
    agreement_readers.get_stamp.clear()
    at.run()
    assert not at.exception, at.exception
    gc.collect()
    assert shares[0]() is None and len(shares) == 1  # let go, nothing made on Criteria
    agreement_tab(at, "Trust a judge")
    assert len(shares) == 2 and shares[1]() is not None


def _count_made(monkeypatch, agreement_readers) -> list:
    """Each time the judges' share is made (not read), from caches cleared now."""
    made = []
    real = trust_report.judges_part
    monkeypatch.setattr(trust_report, "judges_part",
                        lambda *args: made.append(args) or real(*args))
    agreement_readers.get_trust_judges.clear()
    return made
