"""Roles are enforced by the services, not by the pages: a reviewer's call to an admin
action is refused with a message saying what is needed, and nothing is written."""

from __future__ import annotations

import pytest

from storage.errors import InvalidInputError
from storage.model_presets import add_model_preset, list_model_presets, remove_model_preset
from storage.services import datasets, people, rubrics, runs
from storage.services.reviewers import Actor, PermissionDeniedError, Role
from storage.services.samples import load_sample
from storage.services.sign_in import SignInClaims, sign_in
from tests.actors import ADMIN
from tests.storage.helpers import CRITERIA, make_dataset, make_rubric, make_run


def signed_in(sessions, email: str, name: str = "") -> Actor:
    """A person whose provider verified their e-mail, as most do."""
    claims = SignInClaims(issuer="https://idp.example.org", subject=f"sub-{email}",
                          email=email, email_verified=True, name=name)
    return sign_in(sessions, claims).actor


@pytest.fixture
def boss(sessions, monkeypatch) -> Actor:
    monkeypatch.setenv(people.ADMINS_VARIABLE, "Boss@Example.org")
    return signed_in(sessions, "boss@example.org", name="Boss")


def _signed_in(sessions, boss, email: str, role: Role | None) -> Actor:
    if role is not None:
        people.set_role(sessions, email, role, actor=boss)
    return signed_in(sessions, email, name=email.split("@")[0])


def _admin_actions(sessions, version, dataset, run):
    """Every admin action, each a call a reviewer's page could make."""
    return {
        "create a rubric": lambda a: rubrics.create_rubric(sessions, "New", CRITERIA, actor=a),
        "import a rubric": lambda a: rubrics.import_rubric(
            sessions, "Imported", "- requirement: Is kind\n", filename="r.yaml", actor=a),
        "edit a rubric": lambda a: rubrics.save_criteria(sessions, version.id, CRITERIA[:2],
                                                         actor=a),
        "freeze a rubric version": lambda a: rubrics.freeze_version(sessions, version.id,
                                                                    actor=a),
        "rename a rubric": lambda a: rubrics.rename_rubric(sessions, version.rubric_id, "X",
                                                           actor=a),
        "archive a rubric": lambda a: rubrics.archive_rubric(sessions, version.rubric_id,
                                                             actor=a),
        "delete a rubric": lambda a: rubrics.delete_rubric(sessions, version.rubric_id,
                                                           confirm=True, actor=a),
        "create a dataset": lambda a: datasets.create_dataset(sessions, "D2", actor=a),
        "import responses": lambda a: datasets.import_responses(
            sessions, dataset.id, [{"text": "hello"}], actor=a),
        "add a response": lambda a: datasets.add_response(sessions, dataset.id, "hi", actor=a),
        "archive a dataset": lambda a: datasets.archive_dataset(sessions, dataset.id, actor=a),
        "delete a dataset": lambda a: datasets.delete_dataset(sessions, dataset.id,
                                                              confirm=True, actor=a),
        "launch a grading run": lambda a: runs.create_run(
            sessions, rubric_version_id=version.id, dataset_id=dataset.id,
            grader="per_criterion", model="openai/judge", actor=a),
        "cancel a grading run": lambda a: runs.cancel_run(sessions, run.id, actor=a),
        "change the model list": lambda a: add_model_preset("openai/gpt-4.1-mini", actor=a,
                                                            sessions=sessions),
        "load the samples": lambda a: load_sample(
            sessions, rubric_name="S", rubric_text="- requirement: Is kind\n",
            rubric_filename="s.yaml", dataset_name="S", responses_data=b"text\nhi\n",
            responses_filename="s.csv", actor=a),
        "change people's roles": lambda a: people.set_role(sessions, "x@example.org",
                                                           Role.ADMIN, actor=a),
    }


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.ADJUDICATOR, None],
                         ids=["reviewer", "adjudicator", "no-role"])
def test_admin_actions_are_refused_to_non_admins_and_change_nothing(sessions, boss, role):
    version = make_rubric(sessions)
    dataset, _ = make_dataset(sessions)
    run = make_run(sessions, version.id, dataset.id)
    person = _signed_in(sessions, boss, "rita@example.org", role)
    before = (rubrics.list_rubrics(sessions, include_archived=True),
              datasets.list_datasets(sessions, include_archived=True),
              runs.list_runs(sessions), people.list_people(sessions),
              people.list_audit_events(sessions), list_model_presets())
    for action, call in _admin_actions(sessions, version, dataset, run).items():
        with pytest.raises(PermissionDeniedError) as refused:
            call(person)
        message = str(refused.value)
        assert f"may not {action}: that needs an admin" in message, action
        assert ("you have: " + (role.value if role else "no role yet")) in message
        assert "Ask an admin" in message
    after = (rubrics.list_rubrics(sessions, include_archived=True),
             datasets.list_datasets(sessions, include_archived=True),
             runs.list_runs(sessions), people.list_people(sessions),
             people.list_audit_events(sessions), list_model_presets())
    assert after == before


def test_nobody_signed_in_is_refused(sessions):
    with pytest.raises(PermissionDeniedError, match="sign in"):
        rubrics.create_rubric(sessions, "New", CRITERIA, actor=None)


def test_the_admin_can_do_each_action_and_it_is_recorded_under_their_identity(sessions, boss):
    version = rubrics.create_rubric(sessions, "Dosing", CRITERIA, actor=boss)
    assert version.created_by == "boss@example.org"
    edited = rubrics.save_criteria(sessions, rubrics.freeze_version(
        sessions, version.id, actor=boss).id, CRITERIA[:2], actor=boss)
    assert (edited.number, edited.created_by) == (2, "boss@example.org")
    dataset = datasets.create_dataset(sessions, "Answers", responses=[{"text": "a"}],
                                      actor=boss)
    assert dataset.imported_by == "boss@example.org"
    datasets.import_responses(sessions, dataset.id, [{"text": "b"}], actor=boss)
    run = runs.create_run(sessions, rubric_version_id=edited.id, dataset_id=dataset.id,
                          grader="per_criterion", model="openai/judge", actor=boss)
    assert run.launched_by == "boss@example.org"
    runs.cancel_run(sessions, run.id, actor=boss)
    runs.requeue_run(sessions, run.id, actor=boss)
    rubrics.archive_rubric(sessions, version.rubric_id, actor=boss)
    rubrics.archive_rubric(sessions, version.rubric_id, archived=False, actor=boss)
    datasets.delete_dataset(sessions, dataset.id, confirm=True, actor=boss)
    people.set_role(sessions, "Rita@Example.org", "adjudicator", actor=boss)
    events = [(e.actor, e.action, e.target_kind, e.target_name, e.detail)
              for e in reversed(people.list_audit_events(sessions))]
    assert events == [
        ("boss@example.org", "create", "rubric", "Dosing", ""),
        ("boss@example.org", "import responses", "dataset", "Answers", "1 responses"),
        ("boss@example.org", "import responses", "dataset", "Answers", "1 responses"),
        ("boss@example.org", "launch", "run", "openai/judge", "per_criterion over 2 responses"),
        ("boss@example.org", "cancel", "run", "openai/judge", "was queued"),
        ("boss@example.org", "requeue", "run", "openai/judge", "was cancelled"),
        ("boss@example.org", "archive", "rubric", "Dosing", ""),
        ("boss@example.org", "restore", "rubric", "Dosing", ""),
        ("boss@example.org", "delete", "dataset", "Answers",
         "with 2 responses, 1 runs, 0 grades, 0 human verdicts, 0 comparisons"),
        ("boss@example.org", "change role", "person", "rita@example.org",
         "no role → adjudicator"),
    ]
    rita = signed_in(sessions, "rita@example.org")
    assert rita.roles == {Role.ADJUDICATOR} and rita.can(Role.REVIEWER)
    assert not rita.can(Role.ADMIN)


def test_roles_change_and_the_environment_admins_cannot_be_demoted(sessions, boss):
    people.set_role(sessions, "ana@example.org", Role.ADMIN, actor=boss)
    ana = signed_in(sessions, "ana@example.org")
    assert ana.can(Role.ADMIN)
    # Ana (an admin from the table) may demote others but neither herself nor boss.
    with pytest.raises(InvalidInputError, match="RUBRIC_WORKBENCH_ADMINS"):
        people.set_role(sessions, "boss@example.org", Role.REVIEWER, actor=ana)
    with pytest.raises(InvalidInputError, match="your own admin role"):
        people.set_role(sessions, "ana@example.org", None, actor=ana)
    people.set_role(sessions, "ana@example.org", None, actor=boss)
    assert signed_in(sessions, "ana@example.org").roles == frozenset()
    with pytest.raises(InvalidInputError, match="not an e-mail"):
        people.set_role(sessions, "ana smith", Role.REVIEWER, actor=boss)
    with pytest.raises(InvalidInputError, match="unknown role"):
        people.set_role(sessions, "cy@example.org", "owner", actor=boss)
    assert people.admin_contacts(sessions) == ["boss@example.org"]


def test_signing_in_twice_records_one_person(sessions):
    first = signed_in(sessions, "Cy@Example.org", name="Cy")
    again = signed_in(sessions, "cy@example.org", name="Cy Young")
    assert first.key == again.key == "cy@example.org" and again.name == "Cy Young"
    assert [(p.key, p.name, p.role) for p in people.list_people(sessions)] == [
        ("cy@example.org", "Cy Young", None)]


def test_a_local_or_command_line_actor_holds_every_role(sessions):
    version = rubrics.create_rubric(sessions, "Local", CRITERIA, actor=ADMIN)
    assert version.created_by == "tester"
    remove_model_preset("openai/none", actor=ADMIN, sessions=sessions)
