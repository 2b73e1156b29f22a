"""The docs include the README's first steps (pymdownx.snippets) instead of copying them: each
included section must exist in the README, or the page would silently lose it."""

from __future__ import annotations

import re

from tests.docs.pages import PAGES, ROOT

INCLUDE = re.compile(r'^--8<-- "README\.md:([\w-]+)"$', re.M)


def _section(readme: str, name: str) -> str:
    match = re.search(rf"<!-- --8<-- \[start:{name}\] -->\n(.*?)<!-- --8<-- \[end:{name}\] -->",
                      readme, re.S)
    return match[1] if match else ""


def test_every_included_readme_section_exists_and_has_text():
    readme = (ROOT / "README.md").read_text()
    included = {name for page in PAGES[1:] for name in INCLUDE.findall(page.read_text())}
    assert {"intro", "start", "first-result", "tests", "library-example"} <= included
    for name in included:
        assert len(_section(readme, name).split()) > 10, name


def test_every_readme_section_is_included_somewhere():
    readme = (ROOT / "README.md").read_text()
    marked = set(re.findall(r"<!-- --8<-- \[start:([\w-]+)\] -->", readme))
    included = {name for page in PAGES[1:] for name in INCLUDE.findall(page.read_text())}
    assert marked == included
