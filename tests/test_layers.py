"""The package's layers, as each sub-package's docstring states them: a module imports its own sub-package's
modules and those of the layers below it, never one above (nor ``stores`` and ``workers`` each other).

    extras | output | version  <  fingerprint  <  matching  <  stores | workers  <  guards  <  crawl
        <  batch  <  spark  <  report  <  cli

The package's face (its ``__init__``, which exports from every layer) and the entry points (``python -m``,
the script spark-submit runs) stand above them all.  Read from the source (every import, at module level or
inside a function), so the check needs no import.
"""

from __future__ import annotations

import ast
import re
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


#: The repository's Python roots and the names they are imported by.
ROOTS = {
    PROJECT / "pipelines": PACKAGE,
    PROJECT / "bench": "bench",
    PROJECT / "crawler": "crawler",
    PROJECT / "tests": "tests",
}


def repository_modules() -> dict[str, Path]:
    found = {}
    for root, name in ROOTS.items():
        for path in [*root.rglob("*.py"), *root.rglob("*.pyx")]:  # a compiled module is imported by its name too
            if ".cache" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            found[".".join([name, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    return found


def import_edges(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The repository's modules ``module`` imports, at module level or in a function; ``from P import n`` is
    an edge to the module ``P.n`` where there is one, else to ``P``."""
    if path.suffix != ".py":
        return set()  # Cython: it imports no module of the repository
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    edges = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            edges |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                edges.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target)
    return {edge for edge in edges if edge in known and edge != module}


def import_cycles() -> list[list[str]]:
    """Groups of the repository's modules that import each other, directly or through others (Tarjan)."""
    known = repository_modules()
    graph = {module: import_edges(module, path, known) for module, path in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_import_cycle_anywhere_in_the_repository() -> None:
    assert import_cycles() == []


def test_an_import_cycle_is_found(tmp_path: Path, monkeypatch) -> None:
    """The check itself: two bench modules that import each other, one of them inside a function."""
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "__init__.py").write_text("")
    (tmp_path / "bench" / "a.py").write_text("from bench.b import f\n")
    (tmp_path / "bench" / "b.py").write_text("def f():\n    from bench import a\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOTS"]), "ROOTS", {tmp_path / "bench": "bench"})
    assert import_cycles() == [["bench.a", "bench.b"]]


def contents_list(package: Path) -> tuple[set[str], set[str]]:
    """What a sub-package's docstring names as its contents (``module``, ``file.pyx``, ``folder/``; the "May
    import" line left out), and what its folder holds."""
    text = (ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or "").split("May import")[0]
    named = {name for name in re.findall(r"``([^`]+)``", text) if re.fullmatch(r"[a-z_]+(\.pyx|\.pxi|\.lua|/)?", name)}
    held = {
        path.stem if path.suffix == ".py" else f"{path.name}/" if path.is_dir() else path.name
        for path in package.iterdir()
        if (path.suffix in {".py", ".pyx", ".pxi", ".lua"} and path.name != "__init__.py")
        or (path.is_dir() and not path.name.startswith(("_", ".")))
    }
    return named, held


def test_each_sub_package_lists_its_contents_as_they_are() -> None:
    """Every module, extension source and folder of a sub-package is named in its docstring, and nothing
    named there is missing from the folder."""
    disagree = {}
    for init in sorted(SOURCE.rglob("__init__.py")):
        if init.parent == SOURCE:
            continue  # the package's face speaks to users, not of its files
        named, held = contents_list(init.parent)
        if named != held:
            disagree[str(init.parent.relative_to(SOURCE))] = {"not listed": held - named, "not there": named - held}
    assert disagree == {}
