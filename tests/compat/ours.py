"""The differential cases run through ``grading``: the very case code of
drivers/rubric_driver.py, with ``grading`` in place of ``rubric``."""

from __future__ import annotations

from typing import Any

from tests.compat.drivers import rubric_driver as driver

GRADING = driver.load("grading")


async def run_case(case: dict[str, Any], *, models: bool = False) -> dict[str, Any]:
    # The scripted judge answers once: grading's retry on a bad answer would ask it again.
    return await driver.run_case(case, GRADING, models=models, options={"max_retries": 0})
