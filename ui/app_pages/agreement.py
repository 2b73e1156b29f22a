"""Agreement: how far each judge agrees with the others and with the reviewers, at what cost.

Every number comes from storage.services.agreement (which calls grading.agreement); this page
only picks, formats and draws.
"""

from __future__ import annotations

from functools import partial

import altair as alt
import pandas as pd
import streamlit as st

from grading.errors import RubricWorkbenchError
from storage.errors import ImportProblemsError
from storage.services import labels
from storage.services.agreement import HUMAN, AgreementReport, AgreementSource
from ui import agreement_baseline, calibration_view, safe_text
from ui import agreement_readers as readers
from ui.auth import current_actor
from ui.runtime import database_key, get_sessions
from ui.wording import plural

ALL_SOURCES = "all"
EMPTY_HINT = (
    "Grade this dataset with at least two runs on the **Grade** page, or review some "
    "verdicts on the **Review** page, to compare sources."
)


def fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}%"


def fmt_cost(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def short(source: AgreementSource) -> str:
    label = safe_text.text(source.label)
    return label if len(label) <= 48 else label[:47] + "…"


def render_header(report: AgreementReport) -> None:
    data = report.data
    alpha = report.alpha.overall
    cols = st.columns(4)
    cols[0].metric("Krippendorff's α", fmt(alpha.alpha),
                   help="Nominal alpha over MET/UNMET across every run with per-criterion "
                        "verdicts and the human verdicts. 1 = perfect agreement, 0 = chance.")
    cols[1].metric("Verdict sources", len(data.verdict_sources))
    cols[2].metric("Reviewed responses", data.reviewed_responses,
                   help="Responses with at least one human verdict.")
    cols[3].metric("Fully reviewed", data.fully_reviewed_responses,
                   help="Responses with a human verdict on every criterion: these have a "
                        "human score.")
    details = (f"α uses {alpha.pairable_units} (response, criterion) units with MET/UNMET "
               f"from two or more sources; {alpha.excluded_cannot_assess} CANNOT_ASSESS "
               "verdicts excluded.")
    st.caption(details + (f" **Note:** {alpha.note}." if alpha.note else ""))


def render_judges(report: AgreementReport) -> None:
    st.subheader("Judges: agreement next to cost")
    if not report.judges:
        st.info("No runs yet: " + EMPTY_HINT)
        return
    has_human = any(s.is_human for s in report.data.sources)
    rows = []
    for judge in report.judges:
        s, v, sc = judge.source, judge.verdicts_vs_human, judge.scores_vs_human
        status = "" if s.status == "done" else f" ({s.status})"
        rows.append({
            "Judge": safe_text.text(s.label) + status,
            "Grades": f"{s.grades}" + (f" ({s.failed} failed)" if s.failed else ""),
            "Tokens / grade": fmt(s.tokens_per_grade, 0),
            "Cost": fmt_cost(s.cost)
            + (f" (+{s.unknown_cost_count} unpriced)" if s.cost is not None
               and s.unknown_cost_count else ""),
            "Cost / grade": fmt_cost(s.cost_per_grade),
            "κ vs Human": fmt(v.cohens_kappa) if v else "—",
            "Agreement": fmt_pct(v.percent_agreement) if v else "—",
            "Pairs": v.pairs_used if v else 0,
            "Score r": fmt(sc.pearson) if sc else "—",
            "Score bias": fmt(sc.mean_signed_difference, 3) if sc else "—",
        })
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption("Agreement, κ and pairs: the judge's verdicts against the human verdicts. "
               "Score r: Pearson correlation with the human score; score bias: mean of "
               "judge − human score (positive: the judge is more lenient).")
    for judge in report.judges:
        note = _judge_note(judge, has_human)
        if note:
            st.caption(f":material/info: {safe_text.md(judge.source.label)}: {note}")
    points = [
        {"Judge": safe_text.text(j.source.label), "cost": j.source.cost_per_grade,
         "kappa": j.verdicts_vs_human.cohens_kappa}
        for j in report.judges
        if j.verdicts_vs_human and j.verdicts_vs_human.cohens_kappa is not None
        and j.source.cost_per_grade is not None
    ]
    if len(points) >= 2:
        frame = pd.DataFrame(points)
        # Room on the right for the label of the dearest judge.
        widest = float(frame["cost"].max()) * 1.6 or 1.0
        base = alt.Chart(frame).encode(
            x=alt.X("cost:Q", title="Cost per grade (USD)",
                    scale=alt.Scale(domain=[0, widest], nice=False)),
            y=alt.Y("kappa:Q", title="Cohen's κ vs Human", scale=alt.Scale(domain=[-1, 1])),
        )
        chart = (base.mark_circle(size=120, color="#4c78a8")
                 + base.mark_text(align="left", dx=8, fontSize=12).encode(text="Judge:N"))
        st.altair_chart(chart.properties(height=260, title="Cheaper and as good is top left"),
                        width="stretch")


def _judge_note(judge, has_human: bool) -> str:
    if not judge.source.per_criterion:
        return "holistic: scores only"
    if not has_human:
        return "no human verdicts yet"
    notes = [n for n in (judge.verdicts_vs_human.note if judge.verdicts_vs_human else "",
                         judge.scores_vs_human.note if judge.scores_vs_human else "") if n]
    return "; ".join(notes)


def render_matrix(report: AgreementReport) -> None:
    st.subheader("Cohen's κ between sources")
    sources = report.data.verdict_sources
    if len(sources) < 2:
        st.info("Only one source of per-criterion verdicts so far. " + EMPTY_HINT)
        return
    order = [short(s) for s in sources]
    cells, notes = [], []
    for a in sources:
        for b in sources:
            if a.key == b.key:
                cells.append({"A": short(a), "B": short(b), "kappa": None, "text": "—"})
                continue
            result = report.pair(a.key, b.key).overall
            kappa = result.cohens_kappa
            cells.append({"A": short(a), "B": short(b), "kappa": kappa,
                          "text": f"{fmt(kappa)}\nn={result.pairs_used}"})
            if result.note and order.index(short(a)) < order.index(short(b)):
                notes.append(f"{safe_text.md(a.label)} vs {safe_text.md(b.label)}: "
                             f"{result.note}")
    frame = pd.DataFrame(cells)
    base = alt.Chart(frame).encode(
        x=alt.X("B:N", sort=order, title=None,
                axis=alt.Axis(orient="top", labelAngle=0, labelLimit=260)),
        y=alt.Y("A:N", sort=order, title=None, axis=alt.Axis(labelLimit=320)),
    )
    chart = (
        base.mark_rect(color="#eeeeee", stroke="white")
        + base.mark_rect(stroke="white").encode(color=alt.Color(
            "kappa:Q", title="κ", scale=alt.Scale(domain=[-1, 1], scheme="redyellowgreen")))
        + base.mark_text(fontSize=14, lineBreak="\n").encode(text="text:N")
    )
    st.altair_chart(chart.properties(height=90 * len(sources) + 40), width="stretch")
    st.caption("Each cell: Cohen's κ and n, the (response, criterion) pairs both sources "
               "answered MET or UNMET. CANNOT_ASSESS is left out.")
    for note in notes:
        st.caption(f":material/info: {note}")


def _pair_options(report: AgreementReport) -> dict[str, str]:
    options = {ALL_SOURCES: "All sources (Krippendorff's α)"}
    labels_by_key = {s.key: s.label for s in report.data.sources}
    for a, b in report.pairwise:
        options[f"{a}|{b}"] = safe_text.text(f"{labels_by_key[a]}  vs  {labels_by_key[b]}")
    return options


def render_criteria(report: AgreementReport, scope: tuple) -> tuple[str | None, str | None]:
    """``scope`` is (db, rubric version id, dataset id, stamp): the cached readers' key."""
    st.subheader("Per criterion, worst first")
    options = _pair_options(report)
    default = next((k for k in options if k.startswith(f"{HUMAN}|")), next(iter(options)))
    if st.session_state.get("agreement_pair") not in options:
        st.session_state["agreement_pair"] = default
    choice = st.selectbox("Compare", list(options), format_func=options.get,
                          key="agreement_pair")
    a, b = choice.split("|") if choice != ALL_SOURCES else (None, None)
    rows = readers.get_criterion_table(*scope, a, b)
    table = []
    for row in rows:
        entry = {"Criterion": safe_text.text(row.criterion.label),
                 "Weight": row.criterion.weight,
                 "Requirement": safe_text.text(row.criterion.requirement)}
        if row.pair is not None:
            p = row.pair
            entry |= {"κ": fmt(p.cohens_kappa), "Agreement": fmt_pct(p.percent_agreement),
                      "Balanced F1": fmt(p.balanced_f1), "Pairs used": p.pairs_used,
                      "CANNOT_ASSESS excluded": p.excluded_cannot_assess,
                      "Disagreements": row.disagreements, "Note": p.note}
        else:
            entry |= {"α": fmt(row.alpha.alpha), "Units": row.alpha.pairable_units,
                      "CANNOT_ASSESS excluded": row.alpha.excluded_cannot_assess,
                      "Disagreements": row.disagreements, "Note": row.alpha.note}
        table.append(entry)
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch")
    keys = (a, b) if a and b else tuple(s.key for s in report.data.verdict_sources)
    render_disagreements(report, scope, rows, keys)
    return a, b


def render_disagreements(
    report: AgreementReport, scope: tuple, rows, keys: tuple[str, ...]
) -> None:
    with_examples = [r for r in rows if r.disagreements]
    if not with_examples:
        st.caption("No disagreements between these sources.")
        return
    names = {r.criterion.id: safe_text.text(f"{r.criterion.label} ({r.disagreements})")
             for r in with_examples}
    if st.session_state.get("agreement_criterion") not in names:
        st.session_state["agreement_criterion"] = with_examples[0].criterion.id
    criterion_id = st.selectbox("Examples where they disagree", list(names),
                                format_func=names.get, key="agreement_criterion")
    found = readers.get_disagreements(*scope, keys, criterion_id)
    labels_by_key = {s.key: short(s) for s in report.data.sources}
    frame = pd.DataFrame([
        {"Response": safe_text.text(d.response_label),
         **{f"{labels_by_key[k]}": (v.value if v else "—") for k, v in d.verdicts.items()},
         **{f"Why ({labels_by_key[k]})": safe_text.text(d.reasons[k]) for k in keys}}
        for d in found
    ])
    st.dataframe(frame, hide_index=True, width="stretch")
    options = {d.response_id: safe_text.text(d.response_label) for d in found}
    if st.session_state.get("agreement_open_response") not in options:
        st.session_state["agreement_open_response"] = next(iter(options))
    pick, results_col, review_col = st.columns([2, 1, 1], vertical_alignment="bottom")
    response_id = pick.selectbox("Response", list(options), format_func=options.get,
                                 key="agreement_open_response")
    run_ids = tuple(report.data.source(k).run_id for k in keys
                    if not report.data.source(k).is_human)
    if results_col.button("Open in Results", icon=":material/table_view:"):
        handle_open_in_results(report, run_ids, response_id)
        st.switch_page("app_pages/results.py")
    if review_col.button("Review it", icon=":material/rate_review:"):
        handle_open_in_review(report, response_id)
        st.switch_page("app_pages/review.py")


def handle_open_in_results(report: AgreementReport, run_ids: tuple[int, ...],
                           response_id: int) -> None:
    """Show this response on the Results page, with the compared runs side by side."""
    data, s = report.data, st.session_state
    s.results_set = (data.dataset_id, data.rubric_version_id)
    s.results_run_ids = list(run_ids) or [src.run_id for src in data.sources
                                          if not src.is_human]
    s.results_search = data.response_labels[response_id]
    s.results_failed_only = s.results_disagree_only = False
    s.results_reviewed = "any"
    s.results_page = 1
    s.results_meta_column, s.results_verdict_criterion = "", None
    s.results_open_response = response_id
    s.results_dialog_pending = True  # the Results page opens it


def handle_open_in_review(report: AgreementReport, response_id: int) -> None:
    s = st.session_state
    s.review_set = (report.data.dataset_id, report.data.rubric_version_id)
    s.review_response_id = response_id


def compact(source: AgreementSource) -> str:
    """A short name for axis titles: "Human" or "#3 mini-judge"."""
    if source.is_human:
        return "Human"
    return safe_text.text(f"#{source.run_id} {(source.model or '').rsplit('/', 1)[-1]}")[:28]


def render_confusion(report: AgreementReport, a: str | None, b: str | None) -> None:
    st.subheader("Confusion matrices")
    if a is None or b is None:
        st.caption("Pick two sources under **Compare** to see their confusion matrices.")
        return
    pair = report.pair(a, b)
    source_a, source_b = report.data.source(a), report.data.source(b)
    st.caption(f"Rows: **{safe_text.md(source_a.label)}** · columns: "
               f"**{safe_text.md(source_b.label)}**. Counts of "
               "(response, criterion) pairs; the diagonal is where they agree.")
    names = {c.id: safe_text.text(c.label) for c in report.data.criteria}
    charts = [("All criteria", pair.overall)] + [
        (names[cid], result) for cid, result in pair.per_criterion.items()]
    for start in range(0, len(charts), 4):
        columns = st.columns(4)
        for column, (title, result) in zip(columns, charts[start:start + 4], strict=False):
            cells = [
                {"row": ra, "col": cb, "count": count}
                for ra, counts in zip(("MET", "UNMET"), result.confusion.rows, strict=True)
                for cb, count in zip(("MET", "UNMET"), counts, strict=True)
            ]
            base = alt.Chart(pd.DataFrame(cells)).encode(
                x=alt.X("col:N", sort=["MET", "UNMET"], title=compact(source_b),
                        axis=alt.Axis(orient="top", labelAngle=0, labelFontSize=12)),
                y=alt.Y("row:N", sort=["MET", "UNMET"], title=compact(source_a),
                        axis=alt.Axis(labelFontSize=12)),
            )
            # A cell with no pairs is drawn empty (outlined), never in a fill colour that
            # reads as "some": with n=0 every cell would otherwise get the scale's colour.
            most = max(result.confusion.total, 1)
            chart = (
                base.mark_rect(stroke="#d0d0d0", strokeWidth=1).encode(
                    color=alt.condition(
                        alt.datum.count > 0,
                        alt.Color("count:Q", legend=None,
                                  scale=alt.Scale(scheme="blues", domain=[0, most])),
                        alt.value("white")))
                + base.mark_text(fontSize=18, fontWeight="bold").encode(
                    text="count:Q",
                    color=alt.when(alt.datum.count > most / 2).then(alt.value("white"))
                    .when(alt.datum.count > 0).then(alt.value("black"))
                    .otherwise(alt.value("#9e9e9e")))
            ).properties(width=alt.Step(62), height=alt.Step(48),
                         title=f"{title} (n={result.pairs_used})")
            with column:
                st.altair_chart(chart, width="content")


def render_scores(report: AgreementReport) -> None:
    st.subheader("Judge score vs human score")
    if not report.score_points:
        st.info("No response has a human score yet: review every criterion of a few "
                "responses on the **Review** page to compare scores.")
        return
    labels_by_key = {s.key: s.label for s in report.data.sources}
    frame = pd.DataFrame([
        {"Judge": labels_by_key[p.source_key], "Human score": p.human_score,
         "Judge score": p.judge_score, "Response": report.data.response_labels[p.response_id]}
        for p in report.score_points
    ])
    low = min(frame["Human score"].min(), frame["Judge score"].min(), 0.0)
    high = max(frame["Human score"].max(), frame["Judge score"].max(), 1.0)
    low, high = low - 0.03 * (high - low), high + 0.03 * (high - low)  # no clipped points
    axes = {"x": alt.X("x:Q", title="Human score", scale=alt.Scale(domain=[low, high])),
            "y": alt.Y("y:Q", title="Judge score", scale=alt.Scale(domain=[low, high]))}
    diagonal = alt.Chart(pd.DataFrame({"x": [low, high], "y": [low, high]})).mark_line(
        strokeDash=[4, 4], color="#999999").encode(**axes)
    points = alt.Chart(frame.rename(columns={"Human score": "x", "Judge score": "y"})).mark_point(
        size=110, opacity=0.9, filled=True).encode(
        **axes,
        color=alt.Color("Judge:N", scale=alt.Scale(scheme="tableau10"),
                        legend=alt.Legend(orient="bottom", labelLimit=400, columns=1)),
        shape=alt.Shape("Judge:N"),
        tooltip=["Response", "Judge", alt.Tooltip("x:Q", title="Human score"),
                 alt.Tooltip("y:Q", title="Judge score")],
    )
    st.altair_chart((diagonal + points).properties(height=380), width="stretch")
    st.caption("Dashed line: judge = human. Points above it: the judge scores higher than "
               "the reviewers. Only fully reviewed responses have a human score.")


def handle_import(version_id: int, dataset_id: int) -> bool:
    """Import the uploaded CSV in one transaction; True when something was written."""
    upload = st.session_state.get(f"agreement_import_file_{st.session_state.agreement_nonce}")
    if upload is None:
        st.session_state.agreement_import_problems = ["Choose a CSV file first."]
        return False
    try:
        actor = current_actor()
        if actor is None:
            st.session_state.agreement_import_problems = [
                "Sign in first: an import records who made it."]
            return False
        summary = labels.import_human_verdicts(get_sessions(), version_id, dataset_id,
                                               upload.getvalue(), upload.name, actor=actor)
    except ImportProblemsError as exc:
        st.session_state.agreement_import_problems = [str(p) for p in exc.problems]
        return False
    except RubricWorkbenchError as exc:
        st.session_state.agreement_import_problems = [str(exc)]
        return False
    st.session_state.agreement_import_problems = None
    left_out = [f"{n} {what}" for n, what in ((summary.unchanged, "unchanged"),
                                              (summary.blank, "without a verdict")) if n]
    reviewers = f" (reviewers: {', '.join(summary.reviewers)})" if summary.reviewers else ""
    st.session_state.agreement_flash = (
        f"Imported {plural(summary.verdicts, 'verdict')} on "
        f"{plural(summary.responses, 'response')}{reviewers}."
        + (f" Left out: {', '.join(left_out)}." if left_out else "")
        + " Earlier verdicts stay in the history.")
    st.session_state.agreement_nonce += 1
    readers.clear_after_import()
    return True


def render_labels(version_id: int, dataset_id: int) -> None:
    with st.expander("Export and import labels", expanded=bool(
            st.session_state.agreement_import_problems)):
        sessions = get_sessions()
        name = partial(labels.export_file_name, sessions, rubric_version_id=version_id,
                       dataset_id=dataset_id)
        st.markdown("**Gold set** — the human-reviewed responses as JSONL in a HealthBench-like "
                    "shape: `prompt` (chat messages), `completion`, `rubrics` (criterion, "
                    "points, criteria_met, explanation) and the human score.")
        complete = st.checkbox("Only fully reviewed responses", key="agreement_gold_complete")
        left, right = st.columns(2)
        left.download_button(
            "Download gold set (JSONL)", on_click="ignore", icon=":material/download:",
            data=partial(labels.export_gold_jsonl, sessions, version_id, dataset_id,
                         complete_only=complete),
            file_name=name(kind="gold", ext="jsonl"), mime="application/jsonl")
        right.download_button(
            "Download training set (JSONL)", on_click="ignore", icon=":material/download:",
            data=partial(labels.export_training_jsonl, sessions, version_id, dataset_id),
            file_name=name(kind="training", ext="jsonl"), mime="application/jsonl",
            help="One line per response × run: the text with its effective score (normalized "
                 "when the run normalizes) and raw score.")
        st.divider()
        st.markdown("**Import human verdicts** from a CSV with the columns `response_id` (the "
                    "response's id in the dataset), `criterion` (its name), `verdict` (MET, "
                    "UNMET or CANNOT_ASSESS), `reviewer` and an optional `note`. Nothing is "
                    "imported unless every row is valid. Rows without a verdict, and rows "
                    "equal to the current verdict, are left out.")
        st.download_button(
            "Download the verdict sheet (CSV)", on_click="ignore", icon=":material/download:",
            data=partial(labels.export_verdict_sheet_csv, sessions, version_id, dataset_id),
            file_name=name(kind="verdicts", ext="csv"), mime="text/csv",
            help="Every response × criterion with its current human verdict (blank when "
                 "none): fill it in a spreadsheet and import it here.")
        st.file_uploader("Verdicts CSV", type=["csv"],
                         key=f"agreement_import_file_{st.session_state.agreement_nonce}")
        if st.button("Import verdicts") and handle_import(version_id, dataset_id):
            st.rerun()
        problems = st.session_state.agreement_import_problems
        if problems:
            listed = "\n".join(f"- {p}" for p in problems[:50])
            more = f"\n- … and {len(problems) - 50} more" if len(problems) > 50 else ""
            st.error(f"Nothing was imported; fix these {len(problems)} problems and upload "
                     f"the file again:\n{listed}{more}")


def render_page() -> None:
    st.title("Agreement")
    st.caption("How far each judge agrees with the others and with your reviewers, which "
               "criteria they get wrong, and what each judge costs.")
    db = database_key()
    sets = readers.get_agreement_sets(db)
    if not sets:
        st.info("Nothing to compare yet. " + EMPTY_HINT)
        st.page_link("app_pages/grade.py", label="Go to the Grade page",
                     icon=":material/play_arrow:")
        return
    options = {f"{s.dataset_id}:{s.rubric_version_id}": s for s in sets}
    if st.session_state.get("agreement_set") not in options:
        st.session_state["agreement_set"] = next(iter(options))
    chosen = options[st.selectbox("Dataset × rubric version", list(options),
                                  format_func=lambda k: safe_text.text(options[k].label),
                                  key="agreement_set")]
    version_id, dataset_id = chosen.rubric_version_id, chosen.dataset_id
    flash = st.session_state.agreement_flash
    if flash:
        st.success(safe_text.md(flash))
        st.session_state.agreement_flash = None
    scope = (db, version_id, dataset_id, readers.get_stamp(db, version_id, dataset_id))
    report = readers.get_report(*scope)
    if len(report.data.verdict_sources) < 2:
        st.info("Fewer than two sources of per-criterion verdicts: " + EMPTY_HINT)
    render_header(report)
    calibration_view.render_held_out(report.data)
    render_matrix(report)
    a, b = render_criteria(report, scope)
    render_confusion(report, a, b)
    render_scores(report)
    render_judges(report)
    agreement_baseline.render_baseline(readers.get_baseline(*scope))
    render_labels(version_id, dataset_id)


try:
    render_page()
except RubricWorkbenchError as exc:
    st.error(safe_text.md(str(exc)))
