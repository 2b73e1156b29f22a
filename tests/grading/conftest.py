"""Fixtures for grading tests: the fake OpenAI-compatible provider."""

from tests.fake_provider import fake_provider, fake_provider_server

__all__ = ["fake_provider", "fake_provider_server"]
