"""The tables, in SQLAlchemy 2.0 typed declarative style."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONType = JSON().with_variant(JSONB(), "postgresql")

RUN_STATUSES = ("queued", "running", "done", "failed", "cancelled")
GRADER_KINDS = ("per_criterion", "one_shot", "rubric_as_judge")
VERDICTS = ("MET", "UNMET", "CANNOT_ASSESS")
SCALE_TYPES = ("ordinal", "nominal")


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite stores it naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetimes are not stored; use datetime.now(UTC)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class RubricRow(Base):
    __tablename__ = "rubrics"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    versions: Mapped[list[RubricVersionRow]] = relationship(
        back_populates="rubric", order_by="RubricVersionRow.number"
    )


class RubricVersionRow(Base):
    __tablename__ = "rubric_versions"
    __table_args__ = (UniqueConstraint("rubric_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_id: Mapped[int] = mapped_column(ForeignKey("rubrics.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Set the first time anything is graded or reviewed with this version; never cleared.
    frozen_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_by: Mapped[str | None] = mapped_column(String(320))  # actor key; None before 0004

    rubric: Mapped[RubricRow] = relationship(back_populates="versions")
    criteria: Mapped[list[CriterionRow]] = relationship(
        back_populates="version", order_by="CriterionRow.position",
        cascade="all, delete-orphan", passive_deletes=True,
    )


class CriterionRow(Base):
    """One criterion of a version. ``options`` NULL: binary (MET / UNMET); otherwise a list
    of ``{"label", "value", "na"}`` in the author's order, and ``scale_type`` says whether
    they are ordinal or nominal (NULL on a binary criterion). ``required``: a gate."""

    __tablename__ = "criteria"
    __table_args__ = (
        UniqueConstraint("version_id", "position"),
        CheckConstraint(f"scale_type IS NULL OR {_in('scale_type', SCALE_TYPES)}",
                        name="scale_type"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id", ondelete="CASCADE")
    )
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str | None] = mapped_column(String(200))
    requirement: Mapped[str] = mapped_column(Text)
    weight: Mapped[float] = mapped_column(Float)
    section: Mapped[str | None] = mapped_column(String(200))
    options: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)
    scale_type: Mapped[str | None] = mapped_column(String(20))
    required: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    version: Mapped[RubricVersionRow] = relationship(back_populates="criteria")


class DatasetRow(Base):
    __tablename__ = "datasets"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    imported_by: Mapped[str | None] = mapped_column(String(320))  # actor key; None before 0004


class ResponseRow(Base):
    __tablename__ = "responses"
    # NULL external ids never collide, so responses without one are unconstrained.
    __table_args__ = (
        UniqueConstraint("dataset_id", "external_id"),
        # a dataset's ids from the index alone (Results reads them per view; migration 0037)
        Index("ix_responses_dataset_rows", "dataset_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    external_id: Mapped[str | None] = mapped_column(String(500))
    query: Mapped[str | None] = mapped_column(Text)
    output: Mapped[str] = mapped_column(Text)
    thinking: Mapped[str | None] = mapped_column(Text)
    # The reference answer the judge compares the response with (None: graded without one).
    reference: Mapped[str | None] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RunRow(Base):
    __tablename__ = "grading_runs"
    __table_args__ = (
        CheckConstraint(_in("status", RUN_STATUSES), name="status"),
        CheckConstraint(_in("grader", GRADER_KINDS), name="grader"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id"), index=True
    )
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    grader: Mapped[str] = mapped_column(String(40))
    model: Mapped[str] = mapped_column(String(300))
    # RunSettings as JSON: scoring settings, retries, fallbacks, prompt, api_base. Never keys.
    settings: Mapped[dict[str, Any]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # For the job runner: which worker holds the run and when it last said so.
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    response_count: Mapped[int] = mapped_column(Integer, default=0)
    done_count: Mapped[int] = mapped_column(Integer, default=0)
    failed_count: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    total_tokens: Mapped[int] = mapped_column(Integer, default=0)
    # Sum of the known costs; grades whose cost is unknown are counted, never priced at 0.
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    unknown_cost_count: Mapped[int] = mapped_column(Integer, default=0)
    launched_by: Mapped[str | None] = mapped_column(String(320))  # actor key; None before 0004


class RunResponseRow(Base):
    """The responses a run grades: a whole dataset or a selection, fixed at launch."""

    __tablename__ = "run_responses"

    run_id: Mapped[int] = mapped_column(
        ForeignKey("grading_runs.id", ondelete="CASCADE"), primary_key=True
    )
    response_id: Mapped[int] = mapped_column(
        ForeignKey("responses.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class GradeRow(Base):
    __tablename__ = "grades"
    __table_args__ = (
        UniqueConstraint("run_id", "response_id"),
        # failed grades only (the queue's and Results' "judge failed"; migration 0030)
        Index("ix_grades_failed", "run_id", "response_id",
              sqlite_where=text("score IS NULL OR error IS NOT NULL"),
              postgresql_where=text("score IS NULL OR error IS NOT NULL")),
        # grades whose verdicts are compared criterion by criterion (migration 0031)
        Index("ix_grades_unkeyed", "run_id", "response_id",
              sqlite_where=text("verdict_key IS NULL OR verdict_key = '?'"),
              postgresql_where=text("verdict_key IS NULL OR verdict_key = '?'")),
        # the judges' disagreement (keys and scores grouped by response) read from the
        # index alone (migration 0031)
        Index("ix_grades_compared", "response_id", "run_id", "score", "verdict_key"),
        # scored ones in score order (Results with no filter: histograms, the page by a
        # run's score); partial, so that no other read of a run's grades takes it
        Index("ix_grades_run_ranked", "run_id", "score", "response_id",
              sqlite_where=text("score IS NOT NULL"),
              postgresql_where=text("score IS NOT NULL")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("grading_runs.id", ondelete="CASCADE"))
    response_id: Mapped[int] = mapped_column(
        ForeignKey("responses.id", ondelete="CASCADE"), index=True
    )
    score: Mapped[float | None] = mapped_column(Float)
    raw_score: Mapped[float | None] = mapped_column(Float)
    llm_raw_score: Mapped[float | None] = mapped_column(Float)
    # The holistic judge's explanation (RubricAsJudge); per-criterion reasons live in
    # grade_criteria.
    reason: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    cannot_assess_count: Mapped[int] = mapped_column(Integer, default=0)
    length_penalty: Mapped[float | None] = mapped_column(Float)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    total_tokens: Mapped[int | None] = mapped_column(Integer)
    cost: Mapped[float | None] = mapped_column(Float)
    latency_s: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Failed only because the provider kept failing transiently (5xx, timeouts, 429s after
    # every retry): the runner grades it again in a later pass of the same run.
    transient: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Every criterion's choice in one string, written with the grade: what the judges'
    # disagreement compares (storage/services/verdict_keys.py); NULL: not keyed yet.
    verdict_key: Mapped[str | None] = mapped_column(Text)

    criteria: Mapped[list[GradeCriterionRow]] = relationship(
        order_by="GradeCriterionRow.position", cascade="all, delete-orphan",
        passive_deletes=True,
    )


class GradeCriterionRow(Base):
    """The judge's verdict on one criterion of one grade.

    On a multi-choice criterion ``option`` holds the label of the option the judge chose and
    ``verdict`` only says how it scores: CANNOT_ASSESS when the option is an NA one (an
    abstention, scored by the run's CANNOT_ASSESS strategy), MET otherwise; every reader that
    scores or compares verdicts reads the option (``CriterionGradeInfo.choice``). Keeping
    ``verdict`` filled this way means code that only knows binary verdicts still sees
    "judged" vs "abstained" vs "failed" (NULL) correctly. ``shuffle_order`` (shown position
    -> option index) is kept when the judge saw the options shuffled.
    """

    __tablename__ = "grade_criteria"
    __table_args__ = (
        UniqueConstraint("grade_id", "criterion_id"),
        CheckConstraint(f"verdict IS NULL OR {_in('verdict', VERDICTS)}", name="verdict"),
        # failed criteria only (migration 0030)
        Index("ix_grade_criteria_failed", "grade_id", sqlite_where=text("error IS NOT NULL"),
              postgresql_where=text("error IS NOT NULL")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    grade_id: Mapped[int] = mapped_column(ForeignKey("grades.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str | None] = mapped_column(String(20))
    reason: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text)
    option: Mapped[str | None] = mapped_column(Text)
    shuffle_order: Mapped[list[int] | None] = mapped_column(JSONType)
    # Each sample's choice when the run asked the judge several times per criterion (the
    # verdict above is their majority, grading.samples); NULL when it asked once.
    samples: Mapped[list[str | None] | None] = mapped_column(JSONType)
    # Where the criterion was listed (1 = first) in the one-shot prompt that gave this
    # verdict, when the run shuffled the criteria per response; NULL otherwise.
    prompt_position: Mapped[int | None] = mapped_column(Integer)


PANEL_RULES = ("majority", "unanimous", "any", "weighted")


class PanelRow(Base):
    """A judge panel: two or more runs of one rubric version over one dataset, combined into
    one verdict per criterion by ``rule`` (grading.panels). Its decisions are kept in
    ``panel_verdicts`` / ``panel_grades``, updated whenever a member's grade is stored."""

    __tablename__ = "judge_panels"
    __table_args__ = (CheckConstraint(_in("rule", PANEL_RULES), name="rule"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    rubric_version_id: Mapped[int] = mapped_column(ForeignKey("rubric_versions.id"), index=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    rule: Mapped[str] = mapped_column(String(20))
    # ScoringSettings as JSON: how the panel's verdicts become a score.
    scoring: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    members: Mapped[list[PanelMemberRow]] = relationship(
        order_by="PanelMemberRow.position", cascade="all, delete-orphan", passive_deletes=True,
    )


class PanelMemberRow(Base):
    __tablename__ = "judge_panel_members"

    panel_id: Mapped[int] = mapped_column(
        ForeignKey("judge_panels.id", ondelete="CASCADE"), primary_key=True
    )
    run_id: Mapped[int] = mapped_column(ForeignKey("grading_runs.id"), primary_key=True,
                                        index=True)
    position: Mapped[int] = mapped_column(Integer)
    weight: Mapped[float] = mapped_column(Float, default=1.0)


class PanelVerdictRow(Base):
    """A judge panel's decision on one criterion of one response, kept up to date.

    Derived, not history: ``grading.panels``' rule over the member runs' grades, as
    ``storage.services.panels`` decides it when no member is still grading (a member still
    grading is accounted for when read). ``votes`` holds each member's choice in member
    order: a verdict, ``[label]`` for an option, null when the member has none. Written in
    the transaction that stores a member's grade and when the panel is made
    (storage.services.panel_upkeep); ``rebuild-panels`` recomputes it from the grades."""

    __tablename__ = "panel_verdicts"
    __table_args__ = (
        CheckConstraint(f"verdict IS NULL OR {_in('verdict', VERDICTS)}", name="verdict"),
    )

    panel_id: Mapped[int] = mapped_column(
        ForeignKey("judge_panels.id", ondelete="CASCADE"), primary_key=True)
    response_id: Mapped[int] = mapped_column(
        ForeignKey("responses.id", ondelete="CASCADE"), primary_key=True, index=True)
    criterion_id: Mapped[int] = mapped_column(
        ForeignKey("criteria.id", ondelete="CASCADE"), primary_key=True)
    verdict: Mapped[str | None] = mapped_column(String(20))
    option: Mapped[str | None] = mapped_column(Text)
    met: Mapped[float] = mapped_column(Float)
    unmet: Mapped[float] = mapped_column(Float)
    abstained: Mapped[float] = mapped_column(Float)
    failed: Mapped[int] = mapped_column(Integer)
    tie: Mapped[bool] = mapped_column(Boolean)
    note: Mapped[str] = mapped_column(Text)
    votes: Mapped[list[Any]] = mapped_column(JSONType)


class PanelGradeRow(Base):
    """A judge panel's score of one response some member graded (see PanelVerdictRow):
    ``tie_rule`` is the one the panel decided its ties with (storage.services.panel_ties)."""

    __tablename__ = "panel_grades"
    __table_args__ = (
        Index("ix_panel_grades_score", "panel_id", "score"),
        # a panel's scores by response from the index alone (Results; migration 0037)
        Index("ix_panel_grades_read", "panel_id", "response_id", "score"),
    )

    panel_id: Mapped[int] = mapped_column(
        ForeignKey("judge_panels.id", ondelete="CASCADE"), primary_key=True)
    response_id: Mapped[int] = mapped_column(
        ForeignKey("responses.id", ondelete="CASCADE"), primary_key=True, index=True)
    score: Mapped[float | None] = mapped_column(Float)
    raw_score: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)
    cost: Mapped[float | None] = mapped_column(Float)
    members_graded: Mapped[int] = mapped_column(Integer)
    tie_rule: Mapped[str] = mapped_column(String(20))


class EffectivePanelScoreRow(Base):
    """A judge panel's effective score of one reviewed response, kept up to date.

    Derived: ``compute_effective_grade`` over the panel's stored grade (``panel_grades`` /
    ``panel_verdicts``) with people's decisions from ``effective_verdicts`` in place,
    through the one aggregation and the panel's own settings, for the responses that have
    a row in ``effective_scores`` under the panel's version and a stored panel grade.
    Every other response's effective panel score is its ``panel_grades.score``. Written
    with people's scores (storage.services.people_scores) and with the panel's stored
    decisions (storage.services.panel_upkeep), by storage.services.panel_scores."""

    __tablename__ = "effective_panel_scores"

    panel_id: Mapped[int] = mapped_column(
        ForeignKey("judge_panels.id", ondelete="CASCADE"), primary_key=True)
    response_id: Mapped[int] = mapped_column(
        ForeignKey("responses.id", ondelete="CASCADE"), primary_key=True, index=True)
    score: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)


class JudgePatternSetRow(Base):
    """The judges' pattern count of a (rubric version, dataset), kept in the database so a
    new process reads it instead of counting 3 million verdicts again (issue 41).

    Derived: ``agreement_sides.patterns_query`` over the judges' sources (``keys``, alpha's
    ``voters`` among them), counted at the judges' ``stamp`` (canonical JSON of
    ``agreement_judge_counts.judge_stamp``). Used only while the stamp and keys are the
    current ones; otherwise counted again and replaced (storage.services.agreement_judge_store).
    """

    __tablename__ = "judge_pattern_sets"
    __table_args__ = (UniqueConstraint("rubric_version_id", "dataset_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"),
                                            index=True)
    keys: Mapped[list] = mapped_column(JSONType)
    voters: Mapped[list] = mapped_column(JSONType)
    stamp: Mapped[str] = mapped_column(Text)
    # The count's rows in their order, as columns of raw numbers (agreement_judge_store):
    # 177,000 rows at 100,000 responses read back as one value, not row by row.
    rows: Mapped[bytes] = mapped_column(LargeBinary)
    # The responses a grade could still change when counted (int64s) and their part of
    # ``rows`` (same encoding): a grade landing counts those again instead of every
    # response (agreement_judge_counts.advanced). NULL: not kept (too many open).
    open_ids: Mapped[bytes | None] = mapped_column(LargeBinary)
    open_rows: Mapped[bytes | None] = mapped_column(LargeBinary)


class AgreementInputsRow(Base):
    """The Agreement report's judges-only inputs of a (rubric version, dataset), kept in the
    database so a new process reads them instead of folding the judges' count and reading
    every judge's score again (~1 s at 100,000 responses; issue 41). Derived
    (storage.services.agreement_inputs): the judges' pattern count folded as the report sums
    it, and each run's and ready panel's grades (response, score; a panel's cost), made at
    the judges' ``stamp`` (canonical JSON of ``agreement_judge_counts.judge_stamp`` with the
    format) for the judges ``keys`` and ``voters`` and the scored ``sources``; used only
    while all are the current ones, otherwise made again and replaced
    (storage.services.agreement_inputs_store). ``figures``: JSON, ``arrays``: raw bytes."""

    __tablename__ = "agreement_inputs_kept"
    __table_args__ = (UniqueConstraint("rubric_version_id", "dataset_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"),
                                            index=True)
    keys: Mapped[list] = mapped_column(JSONType)
    voters: Mapped[list] = mapped_column(JSONType)
    sources: Mapped[list] = mapped_column(JSONType)
    stamp: Mapped[str] = mapped_column(Text)
    figures: Mapped[str] = mapped_column(Text)
    arrays: Mapped[bytes] = mapped_column(LargeBinary)


class AgreementPeopleRow(Base):
    """People's side of the Agreement report of a (rubric version, dataset), kept in the
    database so a new process reads it back instead of reading it row by row again (~0.9 s
    at 100,000 responses; issue 41). Derived (storage.services.agreement_people): the
    responses' labels, the verdicts in force, each reviewer's current verdicts and the
    runs' verdicts on the reviewed responses, made at ``stamp`` (canonical JSON of
    ``agreement_people_store.people_stamp``: the whole data stamp, the dataset's responses,
    the version's criteria and carry sources, with the format); used only while it is the
    current one, otherwise made again and replaced (storage.services.agreement_people_store).
    ``figures``: JSON, ``arrays``: raw bytes."""

    __tablename__ = "agreement_people_kept"
    __table_args__ = (UniqueConstraint("rubric_version_id", "dataset_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"),
                                            index=True)
    stamp: Mapped[str] = mapped_column(Text)
    figures: Mapped[str] = mapped_column(Text)
    arrays: Mapped[bytes] = mapped_column(LargeBinary)


class TrustShareRow(Base):
    """The trust report's judges' share of a (rubric version, dataset), kept in the database
    so a new process reads it instead of making it again (~8 s at 100,000 responses; issue
    41). Derived: ``trust_judges.judges_part`` of the full agreement report, made at the
    judges' ``stamp`` (canonical JSON of ``agreement_judge_counts.judge_stamp`` with the
    format) for the judges ``keys``; used only while both are the current ones, otherwise
    made again and replaced (storage.services.trust_share_store). ``figures``: JSON
    (storage.services.trust_share_codec), ``arrays``: the raw bytes of its numpy arrays."""

    __tablename__ = "trust_share_sets"
    __table_args__ = (UniqueConstraint("rubric_version_id", "dataset_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"),
                                            index=True)
    keys: Mapped[list] = mapped_column(JSONType)
    stamp: Mapped[str] = mapped_column(Text)
    figures: Mapped[str] = mapped_column(Text)
    arrays: Mapped[bytes] = mapped_column(LargeBinary)


class MemberAlphaRow(Base):
    """A panel's members' alpha per criterion, kept in the database so a new process reads
    it instead of reading every member's verdict keys again (issue 41). Derived:
    ``panel_agreement.member_agreement`` (``figures``: JSON, storage.services.
    trust_share_codec) computed at the members' ``stamp`` (canonical JSON of
    ``panel_results.member_stamp``); used only while it is the current one, otherwise
    computed again and replaced (storage.services.member_alpha_store)."""

    __tablename__ = "member_alpha_kept"

    panel_id: Mapped[int] = mapped_column(
        ForeignKey("judge_panels.id", ondelete="CASCADE"), primary_key=True)
    stamp: Mapped[str] = mapped_column(Text)
    figures: Mapped[str] = mapped_column(Text)


class PanelFillRow(Base):
    """A judge panel whose ``panel_verdicts`` / ``panel_grades`` are still being filled from
    its members' grades by a worker (storage.jobs.panel_fills); the row goes when the panel
    is filled. ``after_response_id``: the fill has done every response up to this id
    (resumed from there after a crash); ``done`` of ``total`` responses, for the progress
    shown. A worker holds it by ``claimed_by`` and keeps ``heartbeat_at`` fresh."""

    __tablename__ = "panel_fills"

    panel_id: Mapped[int] = mapped_column(
        ForeignKey("judge_panels.id", ondelete="CASCADE"), primary_key=True)
    after_response_id: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    total: Mapped[int | None] = mapped_column(Integer)
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class CriterionTrialRow(Base):
    """A criterion's new wording tried with an existing run's judge on reviewed responses.

    ``results`` keeps every verdict and reason the trial got, so it can be audited and shown
    again; ``adopted_version_id`` is the rubric version made from it, if any."""

    __tablename__ = "criterion_trials"

    id: Mapped[int] = mapped_column(primary_key=True)
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id"), index=True)
    base_run_id: Mapped[int] = mapped_column(ForeignKey("grading_runs.id"))
    requirement: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20))
    note: Mapped[str] = mapped_column(Text, default="")
    cost: Mapped[float | None] = mapped_column(Float)
    results: Mapped[list[Any]] = mapped_column(JSONType)
    adopted_version_id: Mapped[int | None] = mapped_column(ForeignKey("rubric_versions.id"))
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Progress kept in the database while it runs: ``results`` grows towards ``total``; a
    # "running" trial whose ``claimed_by`` process is gone (or whose heartbeat is old) was
    # interrupted, and can be tried again.
    total: Mapped[int | None] = mapped_column(Integer)
    max_cost: Mapped[float | None] = mapped_column(Float)
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


EXAMPLE_ROLES = ("example", "reserve")


class RunExampleRow(Base):
    """A reviewed response a calibrated run shows its judge, per criterion, drawn at launch.

    ``role`` is "example" (shown to every response but itself) or "reserve" (shown in an
    example's place when that example is the response being graded). The verdict and reason
    are kept as shown, so the prompts can be rebuilt and audited; ``human_verdict_id`` is the
    verdict in force they came from. On a multi-choice criterion ``option`` is the label
    people chose (``verdict`` is then MET, as in human_verdicts)."""

    __tablename__ = "run_examples"
    __table_args__ = (
        UniqueConstraint("run_id", "criterion_id", "response_id"),
        CheckConstraint(_in("role", EXAMPLE_ROLES), name="role"),
        CheckConstraint(_in("verdict", ("MET", "UNMET")), name="verdict"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("grading_runs.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    response_id: Mapped[int] = mapped_column(ForeignKey("responses.id", ondelete="CASCADE"),
                                             index=True)
    role: Mapped[str] = mapped_column(String(10))
    position: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str] = mapped_column(Text, default="")
    status: Mapped[str] = mapped_column(String(20))  # agreed | adjudicated
    carried_from: Mapped[int | None] = mapped_column(Integer)  # version number, when carried
    option: Mapped[str | None] = mapped_column(Text)
    human_verdict_id: Mapped[int | None] = mapped_column(
        ForeignKey("human_verdicts.id", ondelete="SET NULL"))


ADJUDICATION_STREAM = ""  # the one shared history of adjudications (never an actor key)


class HumanVerdictRow(Base):
    """Append-only: a change adds a row with the next ``seq`` in its stream; the highest
    ``seq`` per (response, criterion, stream) is that stream's current verdict.

    A stream is one reviewer's own verdicts (``stream`` = the reviewer's key) or the
    adjudications (``stream`` = ADJUDICATION_STREAM, whoever adjudicated). The unique
    (response, criterion, stream, seq) key makes two concurrent writers on one stream
    collide instead of silently forking its history; the loser re-reads and appends after
    the winner.

    On a multi-choice criterion ``option`` is the chosen option's label and ``verdict`` is
    CANNOT_ASSESS for an NA option, MET for any other (as in grade_criteria).
    """

    __tablename__ = "human_verdicts"
    __table_args__ = (
        UniqueConstraint("response_id", "criterion_id", "stream", "seq"),
        CheckConstraint(_in("verdict", VERDICTS), name="verdict"),
        Index("ix_human_verdicts_response_version", "response_id", "rubric_version_id"),
        # An id is never handed out twice (SQLite reuses the largest after a deletion): the
        # pages' fingerprints read (count, newest id). Migration 0035.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    response_id: Mapped[int] = mapped_column(ForeignKey("responses.id"))
    rubric_version_id: Mapped[int] = mapped_column(ForeignKey("rubric_versions.id"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id"), index=True)
    stream: Mapped[str] = mapped_column(String(200))
    seq: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str] = mapped_column(String(20))
    option: Mapped[str | None] = mapped_column(Text)
    # Who: the stable identity (Actor.key) and the name shown at the time (Actor.name).
    reviewer_key: Mapped[str] = mapped_column(String(200))
    reviewer: Mapped[str] = mapped_column(String(200))
    note: Mapped[str] = mapped_column(Text, default="")
    replaces_id: Mapped[int | None] = mapped_column(ForeignKey("human_verdicts.id"))
    # Seconds from opening the response to this save (None when not measured).
    review_seconds: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def adjudication(self) -> bool:
        return self.stream == ADJUDICATION_STREAM


class EffectiveVerdictRow(Base):
    """The human decision of one (response, criterion of a version), kept up to date.

    Derived, not history: the consensus rule (storage.services.consensus) applied to the
    current verdict of every stream, carried verdicts included. One row per (version,
    response, criterion) anyone answered: ``status`` agreed / adjudicated / disputed, the
    applied verdict and option (NULL when disputed), the id of the human verdict that stands
    (``human_verdict_id``; a carried one belongs to an earlier version) and ``carried_from``,
    the number of the version it was given on when that is not this one. Written in the
    same transaction as every verdict (storage.services.effective_upkeep); the
    ``rebuild-effective`` command recomputes it from the append-only history.
    """

    __tablename__ = "effective_verdicts"
    __table_args__ = (
        UniqueConstraint("rubric_version_id", "response_id", "criterion_id",
                         name="uq_effective_verdicts_key"),  # the convention's is too long
        CheckConstraint("status IN ('agreed', 'adjudicated', 'disputed')", name="status"),
        CheckConstraint(f"verdict IS NULL OR {_in('verdict', VERDICTS)}", name="verdict"),
        # The reads: a review set's decisions (version, dataset) in response order.
        Index("ix_effective_verdicts_set", "rubric_version_id", "dataset_id", "response_id",
              "criterion_id"),
        Index("ix_effective_verdicts_response", "response_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    response_id: Mapped[int] = mapped_column(ForeignKey("responses.id", ondelete="CASCADE"))
    criterion_id: Mapped[int] = mapped_column(ForeignKey("criteria.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(20))
    verdict: Mapped[str | None] = mapped_column(String(20))
    option: Mapped[str | None] = mapped_column(Text)
    human_verdict_id: Mapped[int | None] = mapped_column(
        ForeignKey("human_verdicts.id", ondelete="CASCADE"))
    carried_from: Mapped[int | None] = mapped_column(Integer)


class EffectiveScoreRow(Base):
    """People's score of one (response, rubric version), kept up to date.

    Derived, not history: the one aggregation function (``storage.effective.
    compute_human_score``, default scoring settings, as ``reviews.human_scores``) over the
    decisions in ``effective_verdicts``. One row per (version, response) that has a row
    there: how many criteria people decided (``decided``), how many are disputed, and the
    score (NULL until people decided every criterion of the version). Written with
    ``effective_verdicts`` (storage.services.effective_upkeep) and rebuilt with it.
    """

    __tablename__ = "effective_scores"
    __table_args__ = (
        UniqueConstraint("rubric_version_id", "response_id",
                         name="uq_effective_scores_key"),
        # Results: a review set's responses ordered or filtered by people's score.
        Index("ix_effective_scores_set", "rubric_version_id", "dataset_id", "score",
              "response_id"),
        Index("ix_effective_scores_response", "response_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id", ondelete="CASCADE"))
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    response_id: Mapped[int] = mapped_column(ForeignKey("responses.id", ondelete="CASCADE"))
    decided: Mapped[int] = mapped_column(Integer)
    disputed: Mapped[int] = mapped_column(Integer)
    criteria_count: Mapped[int] = mapped_column(Integer)
    score: Mapped[float | None] = mapped_column(Float)
    raw_score: Mapped[float | None] = mapped_column(Float)


class EffectiveRunScoreRow(Base):
    """A run's effective score of one reviewed response, kept up to date.

    Derived: ``compute_effective_grade`` (the run's grade with people's decisions from
    ``effective_verdicts`` in place, through the one aggregation, the run's own settings),
    for the responses that have a row in ``effective_scores`` under the run's version and
    a grade in the run. Every other response's effective score is its grade's own score.
    Written when a grade lands (storage.services.grade_records) and with the effective
    verdicts (storage.services.effective_upkeep); rebuilt with them.
    """

    __tablename__ = "effective_run_scores"
    __table_args__ = (
        UniqueConstraint("run_id", "response_id", name="uq_effective_run_scores_key"),
        Index("ix_effective_run_scores_response", "response_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("grading_runs.id", ondelete="CASCADE"))
    response_id: Mapped[int] = mapped_column(ForeignKey("responses.id", ondelete="CASCADE"))
    score: Mapped[float | None] = mapped_column(Float)
    error: Mapped[str | None] = mapped_column(Text)


class ReviewSetRow(Base):
    """Settings of one review set (a dataset under a rubric version); defaults when absent."""

    __tablename__ = "review_sets"
    __table_args__ = (
        UniqueConstraint("dataset_id", "rubric_version_id"),
        CheckConstraint("reviewers_per_response >= 1", name="reviewers_per_response"),
        CheckConstraint("sample_size >= 0", name="sample_size"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    rubric_version_id: Mapped[int] = mapped_column(
        ForeignKey("rubric_versions.id", ondelete="CASCADE"))
    reviewers_per_response: Mapped[int] = mapped_column(Integer, default=1)
    # Responses drawn at random (the same draw for every reviewer) and put ahead of the
    # rest, so that agreement is not measured on hard cases only. 0: no sample.
    sample_size: Mapped[int] = mapped_column(Integer, default=0)
    updated_by: Mapped[str] = mapped_column(String(200), default="")
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


# -- grading jobs (storage/jobs): provider cache and per-run job counters -----------------------
class ProviderCacheRow(Base):
    """One provider answer, keyed by sha256 of the request (model, messages, schema, sampling).

    Only answers the provider gave (HTTP 200) are stored; a hit is served at no cost.
    """

    __tablename__ = "provider_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String(300))
    text: Mapped[str] = mapped_column(Text)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    cost: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RunJobStatsRow(Base):
    """What the job runner did for a run besides grades: provider calls, cache hits, 429s."""

    __tablename__ = "run_job_stats"

    run_id: Mapped[int] = mapped_column(
        ForeignKey("grading_runs.id", ondelete="CASCADE"), primary_key=True
    )
    provider_calls: Mapped[int] = mapped_column(Integer, default=0)
    cache_hits: Mapped[int] = mapped_column(Integer, default=0)
    rate_limited: Mapped[int] = mapped_column(Integer, default=0)
    # What the runner is waiting for right now (a provider's Retry-After, a full disk), if any.
    notice: Mapped[str | None] = mapped_column(Text, nullable=True)


CHUNK_STATUSES = ("open", "taken", "done")


class RunChunkRow(Base):
    """A slice of a run's responses (by response id) that one worker claims and grades.

    Several workers split one run by claiming chunks; ``pass_no`` > 1 chunks re-grade the
    transient failures of the passes before.
    """

    __tablename__ = "run_chunks"
    __table_args__ = (
        UniqueConstraint("run_id", "pass_no", "first_response_id"),
        CheckConstraint(_in("status", CHUNK_STATUSES), name="status"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("grading_runs.id", ondelete="CASCADE"))
    pass_no: Mapped[int] = mapped_column(Integer)
    first_response_id: Mapped[int] = mapped_column(Integer)
    last_response_id: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(10), default="open")
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class EndpointCapacityRow(Base):
    """What one worker process learned about a provider endpoint's capacity.

    Workers on one endpoint read each other's rows every few seconds: a refusal (429) seen by
    one makes the others back off too, and a pause asked by Retry-After is kept by all.
    """

    __tablename__ = "endpoint_capacity"

    endpoint: Mapped[str] = mapped_column(String(600), primary_key=True)
    holder: Mapped[str] = mapped_column(String(200), primary_key=True)
    limit: Mapped[float] = mapped_column(Float)
    refusals: Mapped[int] = mapped_column(Integer, default=0)
    backoff_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


# -- people and the audit trail (storage/services/people.py) ------------------------------------
ROLES = ("admin", "adjudicator", "reviewer")


class PersonRow(Base):
    """A person known to team mode: their sign-in key (e-mail), name and role (None: no role).

    A row appears the first time someone signs in, or when an admin names them in advance.
    """

    __tablename__ = "people"
    __table_args__ = (
        CheckConstraint(f"role IS NULL OR {_in('role', ROLES)}", name="role"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    role: Mapped[str | None] = mapped_column(String(20))
    role_set_by: Mapped[str | None] = mapped_column(String(320))
    role_set_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AuditEventRow(Base):
    """Append-only: who deleted, archived, imported, cancelled or changed a role, and when."""

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    actor: Mapped[str] = mapped_column(String(320), index=True)
    action: Mapped[str] = mapped_column(String(60))
    target_kind: Mapped[str] = mapped_column(String(40))
    target_id: Mapped[int | None] = mapped_column(Integer)
    target_name: Mapped[str] = mapped_column(String(400), default="")
    detail: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)



# -- pairwise comparisons (storage/services/comparisons.py) -------------------------------------
PAIR_KINDS = ("pair", "identical", "only_a", "only_b")
PAIR_STATES = ("pending", "done", "failed")
PAIR_SIDES = ("A", "B", "TIE", "CANNOT_ASSESS")
MATCH_KEYS = ("id", "query")


class ComparisonRow(Base):
    """A comparison run: the responses of source B compared with source A's, pair by pair,
    on one rubric version, by one judge asked in both orders (grading.pairwise).

    A source is a dataset, or the rows of a dataset whose metadata column ``split_column``
    holds ``a_value`` (or ``b_value``): then both dataset ids are the same dataset."""

    __tablename__ = "comparisons"
    __table_args__ = (
        CheckConstraint(_in("status", RUN_STATUSES), name="status"),
        CheckConstraint(_in("match_by", MATCH_KEYS), name="match_by"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    rubric_version_id: Mapped[int] = mapped_column(ForeignKey("rubric_versions.id"), index=True)
    a_dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    b_dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    split_column: Mapped[str | None] = mapped_column(String(200))
    a_value: Mapped[str | None] = mapped_column(Text)
    b_value: Mapped[str | None] = mapped_column(Text)
    a_label: Mapped[str] = mapped_column(String(400))
    b_label: Mapped[str] = mapped_column(String(400))
    match_by: Mapped[str] = mapped_column(String(10))
    holistic: Mapped[bool] = mapped_column(Boolean, default=False)
    model: Mapped[str] = mapped_column(String(300))
    # The judge's call settings (api_base, timeout, ...). Never keys.
    settings: Mapped[dict[str, Any]] = mapped_column(JSONType)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    error: Mapped[str | None] = mapped_column(Text)
    pair_count: Mapped[int] = mapped_column(Integer, default=0)  # pairs to judge
    done_count: Mapped[int] = mapped_column(Integer, default=0)
    failed_count: Mapped[int] = mapped_column(Integer, default=0)
    cost: Mapped[float] = mapped_column(Float, default=0.0)
    unknown_cost_count: Mapped[int] = mapped_column(Integer, default=0)
    claimed_by: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_by: Mapped[str] = mapped_column(String(320), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class ComparisonPairRow(Base):
    """One matched pair of a comparison, or one row that was not judged and why.

    ``kind``: "pair" (judged: ``state`` pending / done / failed, the aggregated result in
    ``score`` / ``winner``), "identical" (the same text on both sides: reported, not judged),
    "only_a" / "only_b" (no partner in the other source: ``note`` says so)."""

    __tablename__ = "comparison_pairs"
    __table_args__ = (
        UniqueConstraint("comparison_id", "position"),
        CheckConstraint(_in("kind", PAIR_KINDS), name="kind"),
        CheckConstraint(f"state IS NULL OR {_in('state', PAIR_STATES)}", name="state"),
        CheckConstraint(f"winner IS NULL OR {_in('winner', ('A', 'B', 'TIE'))}",
                        name="winner"),
        Index("ix_comparison_pairs_comparison_kind_state", "comparison_id", "kind", "state"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    comparison_id: Mapped[int] = mapped_column(
        ForeignKey("comparisons.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(10))
    match_key: Mapped[str] = mapped_column(Text)
    response_a_id: Mapped[int | None] = mapped_column(
        ForeignKey("responses.id", ondelete="CASCADE"), index=True)
    response_b_id: Mapped[int | None] = mapped_column(
        ForeignKey("responses.id", ondelete="CASCADE"), index=True)
    note: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str | None] = mapped_column(String(10))
    # B's weighted preference share (grading.pairwise.aggregation) and its winner.
    score: Mapped[float | None] = mapped_column(Float)
    winner: Mapped[str | None] = mapped_column(String(5))
    inconsistent_count: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    calls: Mapped[int] = mapped_column(Integer, default=0)
    cost: Mapped[float | None] = mapped_column(Float)
    judged_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    preferences: Mapped[list[ComparisonPreferenceRow]] = relationship(
        order_by="ComparisonPreferenceRow.position", cascade="all, delete-orphan",
        passive_deletes=True,
    )


class ComparisonPreferenceRow(Base):
    """The judge's preference on one criterion of one pair (holistic: ``criterion_id`` NULL,
    one row for the whole rubric), asked in both orders.

    ``first``: the answer with A shown first; ``second``: the answer with B shown first, as
    the judge gave it (its "A" is our B); ``preference``: the two combined
    (grading.pairwise.orders), a flip made a TIE with ``consistent`` false; NULL with an
    ``error`` when a call failed."""

    __tablename__ = "comparison_preferences"
    __table_args__ = (
        UniqueConstraint("pair_id", "position"),
        CheckConstraint(f"first IS NULL OR {_in('first', PAIR_SIDES)}", name="first"),
        CheckConstraint(f"second IS NULL OR {_in('second', PAIR_SIDES)}", name="second"),
        CheckConstraint(f"preference IS NULL OR {_in('preference', PAIR_SIDES)}",
                        name="preference"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    pair_id: Mapped[int] = mapped_column(
        ForeignKey("comparison_pairs.id", ondelete="CASCADE"))
    criterion_id: Mapped[int | None] = mapped_column(ForeignKey("criteria.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    first: Mapped[str | None] = mapped_column(String(20))
    second: Mapped[str | None] = mapped_column(String(20))
    first_reason: Mapped[str] = mapped_column(Text, default="")
    second_reason: Mapped[str] = mapped_column(Text, default="")
    preference: Mapped[str | None] = mapped_column(String(20))
    consistent: Mapped[bool | None] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text)


class PairReviewRow(Base):
    """A person's preference on one criterion of one comparison pair (holistic: the one
    ``position`` 0 with ``criterion_id`` NULL), in the comparison's own terms: ``side`` A, B,
    TIE or CANNOT_ASSESS. Append-only, in streams as ``HumanVerdictRow``: a reviewer's own
    (``stream`` = their key) or the adjudications (``stream`` = ADJUDICATION_STREAM); a change
    adds the next ``seq``, the highest per (pair, position, stream) counts, and two writers
    on one stream collide on the unique key instead of forking its history.

    ``position`` is the criterion's place in the comparison, as in ComparisonPreferenceRow.
    ``swapped``: the reviewer was shown B on the left (storage.services.pair_sides); the side
    was mapped back before it was stored."""

    __tablename__ = "pair_reviews"
    __table_args__ = (
        UniqueConstraint("pair_id", "position", "stream", "seq"),
        CheckConstraint(_in("side", PAIR_SIDES), name="side"),
        {"sqlite_autoincrement": True},  # as human_verdicts: ids never reused
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    # No cascade: people's judgments are never deleted with the pair (as human_verdicts).
    pair_id: Mapped[int] = mapped_column(ForeignKey("comparison_pairs.id"))
    position: Mapped[int] = mapped_column(Integer)
    criterion_id: Mapped[int | None] = mapped_column(ForeignKey("criteria.id"), index=True)
    stream: Mapped[str] = mapped_column(String(200))
    seq: Mapped[int] = mapped_column(Integer)
    side: Mapped[str] = mapped_column(String(20))
    swapped: Mapped[bool] = mapped_column(Boolean, default=False)
    reviewer_key: Mapped[str] = mapped_column(String(200))
    reviewer: Mapped[str] = mapped_column(String(200))
    note: Mapped[str] = mapped_column(Text, default="")
    replaces_id: Mapped[int | None] = mapped_column(ForeignKey("pair_reviews.id"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    @property
    def adjudication(self) -> bool:
        return self.stream == ADJUDICATION_STREAM


PAIR_PANEL_RULES = ("majority",)


class PairPanelRow(Base):
    """A panel of pairwise judges: two or more comparisons of the same two sources on one
    rubric version (each by its own judge), combined per pair and criterion by ``rule``
    (grading.pairwise.panel). Its results are computed from the members' stored preferences
    when read, never stored: what is read always follows the members and the rule."""

    __tablename__ = "pair_panels"
    __table_args__ = (CheckConstraint(_in("rule", PAIR_PANEL_RULES), name="rule"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    rubric_version_id: Mapped[int] = mapped_column(ForeignKey("rubric_versions.id"), index=True)
    rule: Mapped[str] = mapped_column(String(20), default="majority")
    created_by: Mapped[str] = mapped_column(String(320), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    members: Mapped[list[PairPanelMemberRow]] = relationship(
        order_by="PairPanelMemberRow.position", cascade="all, delete-orphan",
        passive_deletes=True,
    )


class PairPanelMemberRow(Base):
    __tablename__ = "pair_panel_members"

    panel_id: Mapped[int] = mapped_column(
        ForeignKey("pair_panels.id", ondelete="CASCADE"), primary_key=True)
    comparison_id: Mapped[int] = mapped_column(ForeignKey("comparisons.id"), primary_key=True,
                                               index=True)
    position: Mapped[int] = mapped_column(Integer)
