"""The command-line reference page is generated from the argument parser at build time
(docs/hooks/cli_reference.py): every command and every option is on it, and nobody wrote a
copy of the help by hand."""

from __future__ import annotations

import argparse
import importlib.util
import re

import pytest
import yaml

from storage.cli import build_parser
from tests.docs.pages import PAGES, ROOT

_SPEC = importlib.util.spec_from_file_location("cli_reference",
                                               ROOT / "docs" / "hooks" / "cli_reference.py")
hook = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(hook)

COMMANDS = hook.commands(build_parser())


def _sections(page: str) -> dict[str, str]:
    parts = re.split(r"^## (rubric-workbench.*)$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_page_is_filled_by_the_hook_the_build_runs():
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert hook.MARKER in page
    assert "docs/hooks/cli_reference.py" in yaml.safe_load(
        (ROOT / "mkdocs.yml").read_text())["hooks"]
    rendered = hook.on_page_markdown(page, page=None)
    assert hook.MARKER not in rendered
    assert "## rubric-workbench grade\n" in rendered


def test_no_page_holds_a_hand_written_copy_of_the_help():
    for path in PAGES:
        assert "usage: rubric-workbench" not in path.read_text(), path


def test_every_command_has_a_section():
    titles = list(_sections(hook.render()))
    assert titles == [" ".join(("rubric-workbench", *path)) for path, _ in COMMANDS]
    assert {"rubric-workbench db upgrade", "rubric-workbench panel create",
            "rubric-workbench worker"} <= set(titles)


@pytest.mark.parametrize("path,parser", COMMANDS, ids=[" ".join(p) or "-" for p, _ in COMMANDS])
def test_every_option_is_in_its_command_section(path, parser):
    section = _sections(hook.render())[" ".join(("rubric-workbench", *path))]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            assert not any(option in section.split() for option in action.option_strings)
            continue
        for option in action.option_strings:
            assert option in section, (path, option)
        if action.help and not isinstance(action, argparse._SubParsersAction):
            text = action.help % {"default": action.default}
            assert " ".join(text.split()[:4]) in " ".join(section.split()), (path, action.dest)
