"""What ``rubric-workbench compare`` prints and writes: the unmatched and identical rows, the
per-criterion table, the overall win rate, and one JSON record per pair."""

from __future__ import annotations

from typing import Any

from grading.pairwise.matching import Item, Matching, Pair
from grading.pairwise.report import PairReport
from grading.pairwise.summary import ComparisonSummary, Tally

SHOWN = 5  # ids or lines listed before "and N more"


def _names(items: list[Any], key) -> str:
    shown = ", ".join(key(item) for item in items[:SHOWN])
    more = len(items) - SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _where(item: Item) -> str:
    return repr(item.id) if item.id else item.location


def print_listing(matching: Matching, a_name: str, b_name: str, by: str) -> None:
    """What will not be judged, and why; then how many pairs will be."""
    for items, name, other in ((matching.only_a, a_name, b_name),
                               (matching.only_b, b_name, a_name)):
        if items:
            print(f"unmatched: {len(items)} row(s) of {name} have no {by} in {other}, not "
                  f"compared: {_names(items, _where)}")
    if matching.identical:
        print(f"identical: {len(matching.identical)} pair(s) have the same text in both files, "
              f"not judged: {_names(matching.identical, lambda p: repr(p.key))}")
    print(f"comparing {len(matching.pairs)} pair(s) matched by {by}, each criterion asked in "
          "both orders")


def _rate(tally: Tally) -> str:
    if tally.win_rate is None:
        return "-"
    text = f"{tally.win_rate:.2f}"
    if tally.interval is not None:
        text += f" [{tally.interval.low:.2f}, {tally.interval.high:.2f}]"
    return text


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def print_summary(summary: ComparisonSummary, model: str, *, holistic: bool,
                  names: tuple[str, str] | None = None) -> None:
    """The per-criterion table and the overall line (B's win rate: ties count half);
    ``names``: the files or sources shown as A and B."""
    header = ("criterion", "B wins", "ties", "A wins", "B win rate [95% CI]", "consistent",
              "failed")
    rows = [(c.label[:40], str(c.tally.wins), str(c.tally.ties), str(c.tally.losses),
             _rate(c.tally), _share(c.consistency_rate), str(c.failed + c.cannot_assess))
            for c in summary.criteria]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    who = f"B ({names[1]}) compared with A ({names[0]})" if names else "B compared with A"
    print(f"\njudge {model}{' (holistic)' if holistic else ''}: {who} on "
          f"{summary.pairs} pair(s); a tie counts half a win")
    for row in (header, *rows):
        print("  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                        for i, cell in enumerate(row)))
    overall = summary.overall
    print(f"\noverall: B wins {overall.wins}, ties {overall.ties}, A wins {overall.losses}; "
          f"B win rate {_rate(overall)}")
    print(f"position consistency: {_share(summary.consistency_rate)} of criterion verdicts "
          "gave the same answer in both orders (the others were made ties)")
    if summary.failed_pairs:
        print(f"{summary.failed_pairs} pair(s) have no result: nothing could be scored")


def print_leaderboard(comparisons: list[tuple[str, str, float]]) -> None:
    """The sources ranked by Bradley-Terry strength over every compared pair's winner."""
    from grading.pairwise.bradley_terry import leaderboard

    if not comparisons:
        print("\nleaderboard: no pair has a winner, nothing to rank")
        return
    standings = leaderboard(comparisons)
    print(f"\nleaderboard (Bradley-Terry over {len(comparisons)} compared pair(s), a tie "
          "counts half; strength is a log-odds, 0 = the average source; 95% bootstrap "
          "interval):")
    header = ("rank", "source", "strength [95% CI]", "P(beats average)", "pairs")
    rows = []
    for s in standings:
        strength = f"{s.strength:+.2f}"
        if s.interval is not None:
            strength += f" [{s.interval.low:+.2f}, {s.interval.high:+.2f}]"
        rows.append((str(s.rank), s.source[:40], strength, f"{s.win_probability:.2f}",
                     str(s.comparisons)))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in (header, *rows):
        print("  ".join(cell.ljust(widths[i]) if i == 1 else cell.rjust(widths[i])
                        for i, cell in enumerate(row)))
    print("sources whose intervals overlap are not shown apart by these pairs")


def record(pair: Pair, report: PairReport) -> dict[str, Any]:
    """One JSON line of --out."""
    return {
        "key": pair.key, "query": pair.query,
        "a": {"id": pair.a.id, "location": pair.a.location},
        "b": {"id": pair.b.id, "location": pair.b.location},
        "winner": report.winner, "score": report.score, "margin": report.margin,
        "holistic": report.holistic, "inconsistent": report.inconsistent_count,
        "error": report.error, "calls": report.calls,
        "criteria": [{"name": p.criterion.name, "requirement": p.criterion.requirement,
                      "weight": p.criterion.weight, "first": p.first, "second": p.second,
                      "preference": p.preference, "consistent": p.consistent,
                      "first_reason": p.first_reason, "second_reason": p.second_reason,
                      "error": p.error} for p in report.preferences],
    }
