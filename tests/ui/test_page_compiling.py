"""Page scripts are compiled from their source, never rebuilt as a Python AST on the script's
thread. With Streamlit's "magic" on, every run of a page went through ast.parse, which on
CPython 3.11 races with another thread formatting a traceback (a background worker logging a
failed call): the page failed with "SystemError: AST constructor recursion depth mismatch"
(seen in CI on the Compare page). Magic is off in the app's config, and no page relies on it."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from streamlit.runtime.scriptrunner.script_cache import ScriptCache

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "ui").rglob("*.py"))


def test_magic_is_off_in_the_apps_config():
    runner = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text()).get("runner", {})
    assert runner.get("magicEnabled") is False


def test_a_page_is_compiled_without_building_a_python_ast(monkeypatch):
    from streamlit import config

    monkeypatch.chdir(ROOT)
    config.get_config_options(force_reparse=True)  # the files the app reads when it starts
    parsed = []
    real_parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parsed.append(a[1:2]) or real_parse(*a, **k))
    code = ScriptCache().get_bytecode(str(ROOT / "ui" / "app_pages" / "compare.py"))
    assert code.co_filename.endswith("compare.py") and parsed == []


def _bare_expressions(tree: ast.AST) -> list[int]:
    """Lines of statements that are a bare non-call expression: what magic would have written."""
    lines = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i, stmt in enumerate(body):
                if not isinstance(stmt, ast.Expr) or isinstance(
                        stmt.value, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom)):
                    continue
                docstring = (i == 0 and isinstance(stmt.value, ast.Constant)
                             and isinstance(stmt.value.value, str)
                             and isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                                   ast.AsyncFunctionDef)))
                if not docstring:
                    lines.append(stmt.lineno)
    return lines


def test_no_page_writes_anything_through_magic():
    found = {str(p.relative_to(ROOT)): lines for p in PAGES
             if (lines := _bare_expressions(ast.parse(p.read_text())))}
    assert found == {}


def test_the_check_finds_a_bare_expression():
    source = '"""doc"""\nimport x\nx.value\nif x:\n    "shown"\n'
    assert _bare_expressions(ast.parse(source)) == [3, 5]
