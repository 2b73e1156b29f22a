"""Persistence for Rubric Workbench: rubrics, datasets, runs, grades, human verdicts."""
