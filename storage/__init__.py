"""Persistence for Rubric Workbench: rubrics, datasets, runs, grades, human verdicts.

Start with ``storage.engine.open_database()`` (migrates to head, returns a session factory)
and call the service functions in ``storage.services`` with it; each is one transaction and
returns plain frozen objects from ``storage.dto``:

- ``services.rubrics``: create/import/export rubrics, versions (frozen on first use), archive.
- ``services.datasets``: datasets and responses, all-or-nothing imports; files are read by
  ``storage.response_files``.
- ``services.runs``: queue runs, status changes, ``record_grade`` one grade at a time.
- ``services.reviews``: append-only human verdicts and effective scores (computed by
  ``grading.aggregation`` through ``storage.effective``).
"""
