"""Who a signed-in person is: an e-mail counts only when the provider verified it; otherwise
the person is their provider's subject (iss + sub), which matches no e-mail and no role until
an admin gives it one. And a team's workbench never opens in local mode."""

from __future__ import annotations

import pytest

from storage.errors import InvalidInputError
from storage.services import people
from storage.services.reviewers import Role, local_actor
from storage.services.sign_in import SignInClaims, sign_in, subject_key

ISSUER = "https://idp.example.org/realms/team"
BOSS = "boss@example.org"


def _claims(email: str = "", verified: object = True, subject: str = "sub-1",
            name: str = "") -> SignInClaims:
    return SignInClaims(issuer=ISSUER, subject=subject, email=email, email_verified=verified,
                        name=name)


@pytest.fixture
def admin(sessions, monkeypatch):
    monkeypatch.setenv(people.ADMINS_VARIABLE, BOSS)
    return sign_in(sessions, _claims(BOSS, subject="boss-sub", name="Boss")).actor


@pytest.mark.parametrize("verified", [
    pytest.param(False, id="false"),
    pytest.param(None, id="claim-missing"),
    pytest.param("false", id="string-false"),
    pytest.param(1, id="one-is-not-true"),
])
def test_an_unverified_admin_address_signs_in_as_nobody_with_a_role(sessions, admin, verified):
    eve = sign_in(sessions, _claims("Boss@Example.org", verified, subject="eve-sub", name="Eve"))
    assert eve.actor.roles == frozenset()
    assert eve.actor.key == f"subject:{ISSUER}#eve-sub"
    assert eve.unverified_email == "Boss@Example.org"
    # The admin's own record is untouched: Eve's name did not land on it.
    [boss] = [p for p in people.list_people(sessions) if p.key == BOSS]
    assert boss.name == "Boss" and boss.role == "admin"


def test_an_unverified_address_of_a_person_with_a_role_gets_no_role(sessions, admin):
    people.set_role(sessions, "rita@example.org", Role.ADJUDICATOR, actor=admin)
    eve = sign_in(sessions, _claims("rita@example.org", False, subject="eve-sub"))
    assert eve.actor.roles == frozenset() and eve.unverified_email == "rita@example.org"
    rita = sign_in(sessions, _claims("rita@example.org", True, subject="rita-sub"))
    assert rita.actor.roles == {Role.ADJUDICATOR} and rita.unverified_email == ""


def test_a_verified_address_given_as_the_string_true_counts(sessions, admin):
    # Some providers (AWS Cognito) send the claim as a string.
    signed = sign_in(sessions, _claims(BOSS, "true", subject="boss-sub"))
    assert signed.actor.key == BOSS and signed.actor.can(Role.ADMIN)


def test_a_subject_given_a_role_signs_in_with_it_and_only_that_subject(sessions, admin):
    """Without a verified e-mail, an admin gives the role to the subject key the person sees;
    the same subject at another issuer, or another case, is someone else."""
    first = sign_in(sessions, _claims("ana@example.org", False, subject="Ana-Sub", name="Ana"))
    assert not first.actor.roles
    assert first.actor.key in {p.key for p in people.list_people(sessions)}  # admins find it
    people.set_role(sessions, first.actor.key, Role.REVIEWER, actor=admin)
    again = sign_in(sessions, _claims("ana@example.org", False, subject="Ana-Sub"))
    assert again.actor.key == first.actor.key and again.actor.roles == {Role.REVIEWER}
    assert not sign_in(sessions, _claims(subject="ana-sub")).actor.roles
    other = SignInClaims(issuer="https://other.example.org", subject="Ana-Sub")
    assert not sign_in(sessions, other).actor.roles


def test_an_admin_subject_can_be_named_in_the_environment(sessions, monkeypatch):
    """A provider that never verifies e-mails (Entra's email claim) still has a first admin."""
    key = subject_key(ISSUER, "Entra-Oid")
    monkeypatch.setenv(people.ADMINS_VARIABLE, f"{key}, {BOSS}")
    assert sign_in(sessions, _claims(subject="Entra-Oid")).actor.can(Role.ADMIN)
    assert not sign_in(sessions, _claims(subject="entra-oid")).actor.roles


def test_a_subject_that_looks_like_an_admin_address_is_not_that_admin(sessions, admin):
    signed = sign_in(sessions, _claims(subject=BOSS))
    assert signed.actor.key == f"subject:{ISSUER}#{BOSS}" and not signed.actor.roles
    assert signed.unverified_email == ""  # no e-mail was sent at all


def test_a_provider_sending_neither_subject_nor_verified_email_is_refused(sessions):
    with pytest.raises(InvalidInputError, match="neither a verified e-mail nor a subject"):
        sign_in(sessions, _claims("x@example.org", False, subject=""))


def test_a_very_long_subject_fits_the_key_column(sessions):
    signed = sign_in(sessions, _claims(subject="s" * 400))
    assert signed.actor.key.startswith("subject:sha256:") and len(signed.actor.key) <= 320
    assert sign_in(sessions, _claims(subject="s" * 400)).actor.key == signed.actor.key


def test_local_mode_opens_a_workbench_without_a_team(sessions):
    assert people.team_reason(sessions) == ""
    assert people.local_mode_actor(sessions, "Ana") == local_actor("Ana")


def test_local_mode_never_opens_a_workbench_with_environment_admins(sessions, monkeypatch):
    monkeypatch.setenv(people.ADMINS_VARIABLE, BOSS)
    with pytest.raises(people.LocalModeRefusedError, match="RUBRIC_WORKBENCH_ADMINS"):
        people.local_mode_actor(sessions, "Ana")


def test_local_mode_never_opens_a_workbench_whose_people_have_roles(sessions, admin,
                                                                    monkeypatch):
    people.set_role(sessions, "rita@example.org", Role.REVIEWER, actor=admin)
    monkeypatch.delenv(people.ADMINS_VARIABLE)
    with pytest.raises(people.LocalModeRefusedError, match="1 person has a role"):
        people.local_mode_actor(sessions, "Ana")
