"""Service functions: each one is one transaction and returns plain objects (storage.dto).

They take the session factory returned by ``storage.engine.open_database``.
"""
