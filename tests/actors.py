"""Who the tests act as when they set data up through the services."""

from storage.services.reviewers import local_actor

# Local mode's one person: every role (storage/services/reviewers.py).
ADMIN = local_actor("tester")
