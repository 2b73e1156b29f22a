"""The docs' examples call the local fake provider as their judge."""

from tests.fake_provider import fake_provider, fake_provider_server  # noqa: F401
