"""The documentation against the code: ``docs/`` builds with no warning; its reference has one entry for every
setting and every stat the code has, and none other, with the code's defaults; and the examples of the README
and the docs run.

How the examples run:

- a ```` ```python ```` block of plain assignments to upper-case names is a settings block: executed, loaded into
  Scrapy's ``Settings`` and read by ``DedupSettings.from_settings`` as a crawl reads them (a wrong value fails);
  each ``SIMHASH_DEDUP_*`` name must be a setting, and each class in ``ADDONS`` or ``ITEM_PIPELINES`` must import;
- any other ```` ```python ```` block runs as it is, in a temporary folder holding ``page.html``, ``a.html`` and
  ``b.html`` (real pages of ``tests/data``), the files the examples read;
- every ``simhash-dedup …`` line of a ```` ```sh ````, ```` ```bash ```` or ```` ```console ```` block (after a
  ``$`` prompt there) is parsed by ``scrapy_simhash_dedup.cli.parser()``, and every ``pip install`` of the
  package names the project and extras ``pyproject.toml`` defines.

A block that is not meant to run is marked ```` ```text ````.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from scrapy.settings import Settings
from scrapy.utils.misc import load_object

from scrapy_simhash_dedup import Fingerprint, Fingerprinter
from scrapy_simhash_dedup.cli import parser
from scrapy_simhash_dedup.crawl.settings import RENAMED, DedupSettings
from scrapy_simhash_dedup.crawl.stats import OLD_STAT_NAMES, STATS_PREFIX
from scrapy_simhash_dedup.fingerprint import document
from scrapy_simhash_dedup.fingerprint.fingerprinter import outcomes
from scrapy_simhash_dedup.guards.canonical import CanonicalUrls
from scrapy_simhash_dedup.matching.policy import Mode, Policy, dropped
from scrapy_simhash_dedup.stores.memory import MemoryStore

from .pages import real_page
from .test_same_document import edited

PROJECT = Path(__file__).resolve().parents[1]
DOCS = PROJECT / "docs"
SOURCE = PROJECT / "pipelines"
PAGES = [PROJECT / "README.md", *sorted(path for path in DOCS.rglob("*.md") if "_build" not in path.parts)]
SETTING_NAME = re.compile(r"SIMHASH_DEDUP_[A-Z]+(?:_[A-Z]+)*")
#: Scrapy's ``Settings.get*`` without a default: what each returns for a setting that is not set.
IMPLICIT_DEFAULTS = {"get": None, "getbool": False, "getint": 0, "getfloat": 0.0}


@dataclass(frozen=True)
class Block:
    """A fenced code block of a page."""

    page: Path
    line: int
    language: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(PROJECT)}:{self.line}"


def blocks(page: Path) -> Iterator[Block]:
    for token in MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8")):
        if token.type == "fence" and token.map is not None:
            yield Block(page, token.map[0] + 1, token.info.strip(), token.content)


BLOCKS = [block for page in PAGES for block in blocks(page)]


def entries(page: Path, kind: str) -> dict[str, str]:
    """The ``{setting}`` or ``{stat}`` entries of a reference page: each name, and its text up to the next."""
    text = page.read_text(encoding="utf-8")
    starts = [(match.start(), match[1]) for match in re.finditer(rf"^```\{{{kind}\}} (\S+)\n```$", text, re.M)]
    ends = [start for start, _ in starts[1:]] + [len(text)]
    return {name: text[start:end] for (start, name), end in zip(starts, ends)}


def test_the_docs_build_with_no_warning(tmp_path: Path) -> None:
    """Warnings are errors: a broken reference, a setting or a stat linked to but without its entry, a page left
    out of every table of contents, a docstring autodoc cannot read."""
    built = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=PROJECT,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    cli = (tmp_path / "reference" / "cli.html").read_text(encoding="utf-8")
    for command, options in command_options().items():  # rendered from the parser, every option of every command
        missing = [option for option in options if f'<span class="option">{option}' not in cli]
        assert not missing, f"simhash-dedup {command}: {missing} not in the command-line reference"


def command_options() -> dict[str, list[str]]:
    """Each sub-command of ``simhash-dedup`` and its options, from the parser."""
    commands = next(action for action in parser()._actions if action.choices and isinstance(action.choices, dict))
    return {
        name: [option for action in command._actions for option in action.option_strings]
        for name, command in commands.choices.items()
    }


# -- settings ---------------------------------------------------------------------------------------------------


def settings_in_code() -> set[str]:
    """Every ``SIMHASH_DEDUP_*`` name the package's source uses, but the old names of renamed settings."""
    names = {
        name
        for path in SOURCE.rglob("*")
        if path.suffix in (".py", ".pyx", ".pxi", ".lua")
        for name in SETTING_NAME.findall(path.read_text(encoding="utf-8"))
    }
    return names - set(RENAMED.values())


def literal_defaults() -> dict[str, Any]:
    """The defaults of the settings read directly (``settings.getbool("SIMHASH_DEDUP_ENABLED", True)``), not
    through ``DedupSettings.from_settings``."""
    defaults: dict[str, Any] = {}
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in IMPLICIT_DEFAULTS
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and SETTING_NAME.fullmatch(str(node.args[0].value))
            ):
                if len(node.args) == 1:
                    defaults[node.args[0].value] = IMPLICIT_DEFAULTS[node.func.attr]
                elif isinstance(node.args[1], ast.Constant):
                    defaults[node.args[0].value] = node.args[1].value
    return defaults


def test_every_setting_of_the_code_has_an_entry_and_every_entry_is_a_setting() -> None:
    documented = set(entries(DOCS / "reference" / "settings.md", "setting"))
    code = settings_in_code()
    assert not code - documented, (
        f"settings without an entry in docs/reference/settings.md: {sorted(code - documented)}"
    )
    assert not documented - code, f"entries for settings the code does not read: {sorted(documented - code)}"


def test_a_renamed_setting_is_named_in_its_new_name_s_entry() -> None:
    settings = entries(DOCS / "reference" / "settings.md", "setting")
    for new, old in RENAMED.items():
        assert old in settings[new], f"{new}'s entry does not say it was {old}"


def test_the_defaults_in_the_reference_are_the_code_s() -> None:
    """A ``:Default:`` given as a Python value is the code's: the literal default where a setting is read directly,
    else ``DedupSettings.from_settings`` gives the same settings with it set to that value as without it."""
    direct = literal_defaults()
    read_by_settings = (SOURCE / "crawl" / "settings.py").read_text(encoding="utf-8")
    unset = DedupSettings.from_settings(Settings())
    in_words = set()
    for name, entry in entries(DOCS / "reference" / "settings.md", "setting").items():
        default = re.search(r"^:Default: `([^`]*)`$", entry, re.M)
        if default is None:
            in_words.add(name)
            continue
        value = ast.literal_eval(default[1])
        if name in direct:
            assert value == direct[name], f"{name}: the reference says {value!r}, the code {direct[name]!r}"
        else:
            assert f'"{name}"' in read_by_settings, f"{name}: read neither directly nor by DedupSettings"
            assert DedupSettings.from_settings(Settings({name: value})) == unset, (
                f"{name}: the reference says {value!r}, which is not the code's default"
            )
    assert in_words == {"SIMHASH_DEDUP_WORKERS"}  # the only default not a value: the number of cores but one


def test_every_setting_named_in_the_readme_and_the_docs_exists() -> None:
    known = settings_in_code() | set(RENAMED.values())
    for page in PAGES:
        unknown = set(SETTING_NAME.findall(page.read_text(encoding="utf-8"))) - known
        assert not unknown, f"{page.relative_to(PROJECT)} names settings that do not exist: {sorted(unknown)}"


# -- stats ------------------------------------------------------------------------------------------------------


def fingerprint_outcomes() -> set[str]:
    """What ``fingerprinter.outcomes`` counts a page as: why it was not fingerprinted (the outcome names of
    ``fingerprint.document``), or a short text and the parts it has too few features for."""
    problems = {value for name, value in vars(document).items() if name.isupper() and isinstance(value, str)}
    fingerprints = [Fingerprint(None, None, problem) for problem in problems]
    fingerprints += [
        Fingerprint(content, structure, short=short)
        for content in (None, 1)
        for structure in (None, 1)
        for short in (False, True)
    ]
    return {outcome for fingerprint in fingerprints for outcome in outcomes(fingerprint)}


def drop_reasons() -> set[str]:
    """The reasons a store gives a drop (``Match.reason``), which the code does not list: a page and its copy, a
    short page and its copy, checked in every mode."""
    fingerprinter = Fingerprinter()
    short = b"<html><head><title>A stub</title></head><body><p>Only a few words here.</p></body></html>"
    reasons = set()
    for mode in Mode:
        for html in (real_page("newspaper-theatlanticcities.com1"), short):
            store = MemoryStore(Policy(mode))
            fingerprint = fingerprinter.fingerprint(html)
            store.check_and_add("https://a.test/page", fingerprint)
            if dropped(match := store.check_and_add("https://a.test/copy", fingerprint)):
                reasons.add(match.reason)
    store = MemoryStore(Policy())  # a page met again at its address; the same body under another name
    page = real_page("pandas-doc-ExtensionDtype.empty")
    store.check_and_add("https://a.test/page", fingerprinter.fingerprint(page))
    reasons.add(store.check_and_add("https://a.test/page", fingerprinter.fingerprint(edited(page))).reason)
    article = real_page("newspaper-theatlanticcities.com1")
    store.check_and_add("https://a.test/article", fingerprinter.fingerprint(article))
    renamed = re.sub(rb"<title>.*?</title>", b"<title>Antarctic tourism and the health of penguins</title>", article)
    reasons.add(store.check_and_add("https://b.test/article", fingerprinter.fingerprint(renamed)).reason)
    return reasons


def canonical_sources() -> set[str]:
    """How a canonical URL is chosen (``Canonical.source``), which the code does not list: a page that declares
    none, one on its host, one on another host."""
    return {
        CanonicalUrls(None).choose("https://a.test/story?sid=1", declared).source
        for declared in (None, "/story", "https://elsewhere.test/story")
    }


#: The counts whose names are made at run time, by the literal part before the variable: what they can be.
FAMILIES = {"": fingerprint_outcomes, "items_dropped/": drop_reasons, "canonical/": canonical_sources}


def stat_patterns(node: ast.expr) -> list[tuple[str, str | None]]:
    """The names an argument of a stats call can take: ``(literal, None)``, or ``(prefix, expression)`` for a
    name made at run time; ``STATS_PREFIX`` is read as its value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value, None)]
    if isinstance(node, ast.IfExp):
        return stat_patterns(node.body) + stat_patterns(node.orelse)
    if isinstance(node, ast.JoinedStr):
        text = ""
        for part in node.values:
            if isinstance(part, ast.Constant):
                text += part.value
            elif isinstance(part.value, ast.Name) and part.value.id == "STATS_PREFIX":
                text += STATS_PREFIX
            else:
                return [(text, ast.unparse(part.value))]
        return [(text, None)]
    return [("", ast.unparse(node))]


def stats_in_code() -> set[str]:
    """Every stat the crawl can count: the names given to ``counts.add`` and to the stats collector's
    ``set_value``/``inc_value`` (under ``STATS_PREFIX``), found in the source, the names made at run time
    expanded by ``FAMILIES``.  ``crawl/counts.py`` is left out: it hands the others' counts over."""
    names = set()
    for path in sorted(SOURCE.rglob("*.py")):
        if path == SOURCE / "crawl" / "counts.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
                continue
            receiver = ast.unparse(node.func.value)
            if node.func.attr == "add" and receiver.split(".")[-1] == "counts":
                patterns = stat_patterns(node.args[0])
            elif node.func.attr in ("set_value", "inc_value") and receiver.endswith("stats"):
                patterns = [
                    (text.removeprefix(f"{STATS_PREFIX}/"), variable) for text, variable in stat_patterns(node.args[0])
                ]
            else:
                continue
            for text, variable in patterns:
                where = f"{path.relative_to(PROJECT)}:{node.lineno}"
                if variable is None:
                    names.add(text)
                    continue
                assert text in FAMILIES, f"{where} counts {text}{{{variable}}}, which this test cannot enumerate"
                names |= {text + name for name in FAMILIES[text]()}
    return names


def test_every_stat_of_the_code_has_an_entry_and_every_entry_is_a_stat() -> None:
    documented = {name.removeprefix(f"{STATS_PREFIX}/") for name in entries(DOCS / "reference" / "stats.md", "stat")}
    code = stats_in_code()
    assert {"checked", "rules", "items_dropped/content", "canonical/fetched", "too_large"} <= code  # the scan works
    assert not code - documented, f"stats without an entry in docs/reference/stats.md: {sorted(code - documented)}"
    assert not documented - code, f"entries for stats the code never counts: {sorted(documented - code)}"


def test_a_renamed_stat_is_named_in_its_new_name_s_entry() -> None:
    stats = entries(DOCS / "reference" / "stats.md", "stat")
    for old, new in OLD_STAT_NAMES.items():
        assert f"{STATS_PREFIX}/{old}" in stats[f"{STATS_PREFIX}/{new}"], f"{new}'s entry does not say it was {old}"


# -- the examples -----------------------------------------------------------------------------------------------


def settings_block(code: str) -> bool:
    """Plain assignments to upper-case names (comments aside): a ``settings.py`` excerpt."""
    return all(
        isinstance(statement, ast.Assign)
        and all(isinstance(target, ast.Name) and target.id.isupper() for target in statement.targets)
        for statement in ast.parse(code).body
    )


PYTHON = [block for block in BLOCKS if block.language == "python"]
SHELL = [block for block in BLOCKS if block.language in ("sh", "bash", "console")]


def test_the_examples_are_found() -> None:
    """Each kind the README shows is found and run below: settings, Python, a command line."""
    readme = [block for block in BLOCKS if block.page.name == "README.md"]
    assert any(block in PYTHON and settings_block(block.code) for block in readme)
    assert any(block in PYTHON and not settings_block(block.code) for block in BLOCKS)
    assert any(command[0] == "simhash-dedup" for block in readme if block in SHELL for command in commands(block))


@pytest.mark.parametrize("block", [block for block in PYTHON if settings_block(block.code)], ids=lambda b: b.where)
def test_a_settings_example_is_accepted_as_a_crawl_reads_it(block: Block) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(block.code, block.where, "exec"), namespace)
    values = {name: value for name, value in namespace.items() if name.isupper()}
    unknown = {name for name in values if name.startswith("SIMHASH_DEDUP_")} - settings_in_code()
    assert not unknown, f"{block.where}: not settings of the plugin: {sorted(unknown)}"
    for components in ("ADDONS", "ITEM_PIPELINES"):
        for path in values.get(components, {}):
            load_object(path)
    DedupSettings.from_settings(Settings(values))


@pytest.mark.parametrize("block", [block for block in PYTHON if not settings_block(block.code)], ids=lambda b: b.where)
def test_a_python_example_runs(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "page.html").write_bytes(real_page("newspaper-theatlanticcities.com1"))
    (tmp_path / "a.html").write_bytes(real_page("newspaper-theatlanticcities.com1"))
    (tmp_path / "b.html").write_bytes(real_page("newspaper-theatlanticcities.com2"))
    monkeypatch.chdir(tmp_path)
    exec(compile(block.code, block.where, "exec"), {"__name__": "__main__"})
    if "print(" in block.code:
        assert capsys.readouterr().out.strip(), f"{block.where} printed nothing"


def commands(block: Block) -> Iterator[list[str]]:
    """The command lines of a shell block, continuations joined, comments and a console's ``$`` prompt removed."""
    for line in block.code.replace("\\\n", " ").splitlines():
        if block.language == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if words := shlex.split(line, comments=True):
            yield words


@pytest.mark.parametrize("block", SHELL, ids=lambda b: b.where)
def test_a_command_line_example_is_one_the_command_takes(block: Block) -> None:
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for words in commands(block):
        if words[0] == "simhash-dedup":
            try:
                parser().parse_args(words[1:])
            except SystemExit:
                pytest.fail(f"{block.where}: simhash-dedup does not take {shlex.join(words)}")
        elif words[:2] == ["pip", "install"] and words[2].startswith(project["name"]):
            name, _, extras = words[2].partition("[")
            assert name == project["name"], f"{block.where}: {words[2]}"
            for extra in filter(None, extras.rstrip("]").split(",")):
                assert extra in project["optional-dependencies"], f"{block.where}: no extra [{extra}]"


def test_the_docs_host_builds_this_site_with_warnings_as_errors_and_the_same_sphinx() -> None:
    """Read the Docs (``.readthedocs.yaml``) builds ``docs/conf.py`` failing on a warning, as this test suite does,
    with the versions of Sphinx and MyST that ``requirements.txt`` pins, and the package installed."""
    config = (PROJECT / ".readthedocs.yaml").read_text()
    assert re.search(r"configuration: docs/conf.py\s+fail_on_warning: true", config)
    assert "requirements: docs/requirements.txt" in config and "method: pip" in config
    docs_pins, pins_all = pinned(PROJECT / "docs" / "requirements.txt"), pinned(PROJECT / "requirements.txt")
    assert docs_pins and all(pins_all.get(name) == line for name, line in docs_pins.items()), docs_pins


def pinned(requirements: Path) -> dict[str, str]:
    """A requirements file's pins: name (lower case) -> its ``name==version`` line."""
    return {line.split("==")[0].lower(): line for line in requirements.read_text().splitlines() if "==" in line}


def test_the_pages_read_on_the_code_host_as_in_the_built_site() -> None:
    """A code host renders Markdown, not MyST's roles and targets: the pages link with Markdown links (which the
    build checks, anchors included, and a code host follows), so no ``{ref}`…``` nor ``(label)=`` shows raw."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        raw = re.findall(r"\{[a-z]+\}`[^`]*`", text) + re.findall(r"^\(.+\)=$", text, re.M)
        assert not raw, f"{page.relative_to(PROJECT)} shows raw on a code host: {raw[:5]}"
