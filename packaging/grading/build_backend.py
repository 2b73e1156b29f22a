"""setuptools, after copying ../../grading into ./src (setuptools builds only what is below
the project folder; the library's one copy stays in the repository's grading/)."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (the PEP 517 hooks we do not wrap)

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent / "grading"


def _stage() -> None:
    target = HERE / "src" / "grading"
    if SOURCE.is_dir():  # absent when building from an sdist, which already holds src/
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(SOURCE, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copy2(HERE / "workbench_rubric_judge.py", HERE / "src")


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _stage()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    _stage()
    return _setuptools.build_sdist(sdist_directory, config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _stage()
    return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def get_requires_for_build_wheel(config_settings=None):
    _stage()
    return _setuptools.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    _stage()
    return _setuptools.get_requires_for_build_sdist(config_settings)
