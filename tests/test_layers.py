"""The package's layers, as each sub-package's docstring states them: a module imports its own sub-package's
modules and those of the layers below it, never one above (nor ``stores`` and ``workers`` each other).

    extras | output | version  <  fingerprint  <  matching  <  stores | workers  <  guards  <  crawl  <  batch  <  spark  <  report  <  cli

The package's face (its ``__init__``, which exports from every layer) and the entry points (``python -m``,
the script spark-submit runs) stand above them all.  Read from the source (every import, at module level or
inside a function), so the check needs no import.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import PROJECT

PACKAGE = "scrapy_simhash_dedup"
SOURCE = PROJECT / "pipelines"
#: Lowest first; a tuple is one layer of independent parts.
LAYERS: list[tuple[str, ...]] = [
    ("extras", "output", "version"),
    ("fingerprint",),
    ("matching",),
    ("stores", "workers"),
    ("guards",),
    ("crawl",),
    ("batch",),
    ("spark",),
    ("report",),
    ("cli",),
    ("__main__", "__init__"),
]
#: Above every layer: the package's face and the entry points.
ABOVE = {PACKAGE, f"{PACKAGE}.__main__", f"{PACKAGE}.spark.submit"}
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    return ".".join([PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts)])


def imports(path: Path) -> set[str]:
    """The modules of the package ``path`` imports (relative imports resolved)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.add(target)
            found |= {f"{target}.{alias.name}" for alias in node.names}  # a module imported from its package
    return {name for name in found if name.startswith(PACKAGE + ".")}


def part_of(module: str) -> str:
    """The sub-package (or top-level module) a module of the package belongs to."""
    return module.split(".")[1]


def violations() -> list[str]:
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        importer = module_name(path)
        if importer in ABOVE:
            continue
        mine = part_of(importer)
        for imported in sorted(imports(path)):
            theirs = part_of(imported)
            if theirs not in RANK:  # a name imported from the package root (its exports) counts as the root
                theirs = "__init__"
            if theirs != mine and RANK[theirs] >= RANK[mine]:
                found.append(f"{importer} imports {imported}")
    return found


def test_every_module_imports_only_its_own_layer_and_those_below() -> None:
    assert set(RANK) >= {
        path.name if path.is_dir() else path.stem
        for path in SOURCE.iterdir()
        if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").is_file())
    }
    assert violations() == []


def test_an_import_of_a_higher_layer_is_found(tmp_path: Path, monkeypatch) -> None:
    """The check itself: a fingerprint module that imported the crawl's settings would be reported."""
    source = tmp_path / "pipelines"
    (source / "fingerprint").mkdir(parents=True)
    (source / "crawl").mkdir()
    (source / "fingerprint" / "leak.py").write_text("def f():\n    from ..crawl.settings import DedupSettings\n")
    (source / "crawl" / "settings.py").write_text("from ..fingerprint.leak import f\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["SOURCE"]), "SOURCE", source)
    assert violations() == [
        f"{PACKAGE}.fingerprint.leak imports {PACKAGE}.crawl.settings",
        f"{PACKAGE}.fingerprint.leak imports {PACKAGE}.crawl.settings.DedupSettings",
    ]
