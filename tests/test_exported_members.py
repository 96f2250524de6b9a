"""The public surface: `__all__` sorted, unique and complete; every export documented;
`import musepi_lab` stays light."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = "musepi_lab"
PACKAGE_DIR = Path(__file__).resolve().parents[1] / ROOT


def _public_packages() -> list[str]:
    """The package and every subpackage with no `_`-prefixed part, found on disk
    (`pkgutil.iter_modules`, nothing imported), so a new public subpackage is covered the
    day it appears (as httpx checks its `__all__`)."""
    found, todo = [], [(ROOT, [str(PACKAGE_DIR)])]
    while todo:
        name, path = todo.pop()
        found.append(name)
        for info in pkgutil.iter_modules(path):
            if info.ispkg and not info.name.startswith("_"):
                todo.append((f"{name}.{info.name}", [f"{path[0]}/{info.name}"]))
    return sorted(found)


PACKAGES = _public_packages()


def _module(name):
    return importlib.import_module(name)  # a package that fails to import is a failure


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_unique(name):
    mod = _module(name)
    names = list(mod.__all__)

    # ruff's RUF022 ("isort-style") order: CONSTANTS, then Classes, then the rest.
    def group(n: str) -> tuple[int, list[object]]:
        natural = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", n)]
        return (0 if n.isupper() else 1 if n[0].isupper() else 2, natural)

    assert names == sorted(set(names), key=group), name


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_complete(name):
    mod = _module(name)
    public = {
        n
        for n, v in vars(mod).items()
        if not n.startswith("_")
        and not inspect.ismodule(v)
        and n not in ("annotations", "Any", "importlib")
    }
    assert public <= set(mod.__all__), (
        f"{name} exports names missing from __all__: {sorted(public - set(mod.__all__))}"
    )


@pytest.mark.parametrize("name", PACKAGES)
def test_every_export_resolves_and_has_a_docstring(name):
    mod = _module(name)
    undocumented = []
    for export in mod.__all__:
        value = getattr(mod, export)
        if export.isupper() or export.startswith("__") or not callable(value):
            continue  # constants are documented where they are defined
        if not (inspect.getdoc(value) or "").strip():
            undocumented.append(export)
    assert not undocumented, f"{name}: exports without docstring: {undocumented}"


def test_import_is_light():
    code = (
        "import sys, musepi_lab\n"
        "heavy = [m for m in ('matplotlib', 'ipywidgets', 'papermill', 'pandas', 'openai', 'IPython', 'numpy') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_lazy_names_resolve():
    import musepi_lab

    for name in ("entries_df", "compact", "replay_session"):
        assert callable(getattr(musepi_lab, name))
    with pytest.raises(AttributeError):
        musepi_lab.no_such_name  # noqa: B018


SURFACE_LIMIT = 220  # issue 31: well under half of the 500 names of 21 lists before it


def test_the_surface_stays_small():
    total = sum(len(_module(name).__all__) for name in PACKAGES)
    assert total <= SURFACE_LIMIT, (
        f"{total} supported names: make the new ones private or retire others"
    )


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end >= 0 else len(text)]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_export_has_a_line_in_the_api_page_and_the_readme(name):
    api = _section(
        (PACKAGE_DIR.parent / "docs" / "api.md").read_text(encoding="utf-8"), f"## `{name}` ("
    )
    readme = (PACKAGE_DIR.parent / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}` |"))
    exports = _module(name).__all__
    assert f"## `{name}` ({len(exports)})" in api, "docs/api.md: the count in the heading"
    missing_api = [n for n in exports if f"- `{n}`: " not in api]
    missing_readme = [n for n in exports if f"`{n}`" not in row]
    assert not missing_api, f"docs/api.md, section {name}: no line for {missing_api}"
    assert not missing_readme, f"README.md, supported names, row {name}: {missing_readme}"


def test_the_readme_examples_use_only_supported_names():
    import ast

    from test_readme import readme_examples

    readme = (PACKAGE_DIR.parent / "README.md").read_text(encoding="utf-8")
    used: list[tuple[str, str]] = []
    for code, _ in readme_examples(readme):
        tree = ast.parse(code)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(ROOT):
                used += [(node.module, alias.name) for alias in node.names]
        used += [
            (f"{ROOT}.{sub}" if sub else ROOT, attr)
            for sub, attr in re.findall(r"\bml\.(?:([a-z]\w*)\.)?([A-Za-z_]\w*)", code)
            if not (sub == "" and attr in _module(ROOT)._SUBMODULES)
        ]
    assert used, "the README's examples import nothing from the package"
    unsupported = [
        (module, attr)
        for module, attr in used
        if module != f"{ROOT}.testing" and attr not in getattr(_module(module), "__all__", ())
    ]
    assert not unsupported, f"README examples use names outside __all__: {unsupported}"


@pytest.mark.parametrize("name", PACKAGES)
def test_no_export_shares_a_name_with_a_subpackage(name):
    # `import musepi_lab.x as m` must give the subpackage: an exported function of the same
    # name as a subpackage would be what that statement returns (the attribute wins).
    mod = _module(name)
    if not hasattr(mod, "__path__"):
        return
    subpackages = {info.name for info in pkgutil.iter_modules(mod.__path__)}
    clashes = sorted(set(mod.__all__) & subpackages)
    assert not clashes, f"{name}: exports named like its subpackages: {clashes}"


def test_importing_a_subpackage_as_a_name_gives_the_module():
    code = (
        "import types\n"
        "import musepi_lab.replay as rp, musepi_lab.strategies as st\n"
        "import musepi_lab as ml\n"
        "assert isinstance(rp, types.ModuleType) and isinstance(st, types.ModuleType)\n"
        "assert callable(ml.replay_session) and ml.replay is rp\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
