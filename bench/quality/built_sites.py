"""Sites of kinds no documentation package is, built from real third-party data: a product catalogue and a wiki
of places, each in several languages, for the real-sites family (``bench/quality/real_sites.py``).

- **catalogue-<language>**: Debian's package archive as its catalogue shows it (one page per package, as
  ``packages.debian.org`` lays it out: the name and version, the maintainers' short and long descriptions, the
  related packages with their short descriptions, the download table).  The descriptions are the archive's own,
  in English and as Debian's translators wrote them in German and Chinese (apt's ``Translation-de`` and
  ``Translation-zh_CN`` lists).  A package family (``foo``, ``foo-data``, ``libfoo-dev``, ``foo-doc``) shares most
  of its description: different products whose pages differ by a name, a sentence and a list, as products of one
  template do.
- **places-<language>**: a wiki's stub and list families, as bots write them: a stub per subdivision of ISO
  3166-2 ("Canillo is a parish of Andorra.", its code, its parent region), a list per country (the same lead with
  the country's name, the same sections and references, a table of its subdivisions), in Wikipedia's real chrome
  (a page of the readability test set, its content replaced; a heavy one for the German wiki).  Names in English
  and as iso-codes' translators wrote them in German.

- **questions-<language>**: a Q&A site, one page per question (its answers, its topic's tag, its topic's other
  questions beside it), the questions and answers of ChatterBot's dialog corpus (BSD-3-Clause, from PyPI) in
  English, Chinese and Italian: short pages of one template, each about another question.

The text is real; the template around it is written here (said in ``docs/usage/distances.md``).  Every page is
another document by construction (another product, another place): any drop of one is another document dropped,
whatever the judge says (the wiki's chrome is most of a stub's visible text).
"""

from __future__ import annotations

import gettext
import html
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import lxml.html
import xxhash

APT_LISTS = Path("/var/lib/apt/lists")
ISO_CODES = Path("/usr/share/iso-codes/json/iso_3166-2.json")
#: One source package in this many (by language: translations cover fewer) is in the catalogue, with every binary
#: package it builds (its family).
CATALOGUE_SAMPLE = {"en": 24, "de": 6, "zh": 1}
#: One country in this many is in the wiki of places, with every subdivision it has.
PLACES_SAMPLE = 3

CATALOGUE_WORDS = {
    "en": {
        "title": "Details of package {name} in bookworm",
        "package": "Package: {name} ({version})",
        "related": "Other Packages Related to {name}",
        "depends": "dep:",
        "recommends": "rec:",
        "suggests": "sug:",
        "download": "Download {name}",
        "arch": "Architecture",
        "size": "Package Size",
        "installed": "Installed Size",
        "files": "list of files",
        "links": "Links for {name}",
        "homepage": "Homepage",
        "maintainer": "Maintainer:",
        "similar": "Similar packages:",
        "nav": ("About Debian", "Getting Debian", "Support", "Developers' Corner"),
        "footer": "Content Copyright © 1997 - 2024 SPI Inc.; See license terms. Debian is a trademark of SPI Inc.",
    },
    "de": {
        "title": "Details von Paket {name} in bookworm",
        "package": "Paket: {name} ({version})",
        "related": "Andere Pakete mit Bezug zu {name}",
        "depends": "dep:",
        "recommends": "rec:",
        "suggests": "sug:",
        "download": "Herunterladen von {name}",
        "arch": "Architektur",
        "size": "Paketgröße",
        "installed": "Installierte Größe",
        "files": "Liste der Dateien",
        "links": "Links für {name}",
        "homepage": "Homepage",
        "maintainer": "Betreuer:",
        "similar": "Ähnliche Pakete:",
        "nav": ("Über Debian", "Debian bekommen", "Unterstützung", "Die Ecke für Entwickler"),
        "footer": "Copyright © 1997 - 2024 SPI Inc.; Lizenzbedingungen. Debian ist ein Warenzeichen von SPI Inc.",
    },
    "zh": {
        "title": "bookworm 中的软件包 {name} 详细信息",
        "package": "软件包：{name} ({version})",
        "related": "与 {name} 相关的其他软件包",
        "depends": "dep:",
        "recommends": "rec:",
        "suggests": "sug:",
        "download": "下载 {name}",
        "arch": "硬件架构",
        "size": "软件包大小",
        "installed": "安装后大小",
        "files": "文件列表",
        "links": "{name} 的相关链接",
        "homepage": "主页",
        "maintainer": "维护者：",
        "similar": "相似软件包：",
        "nav": ("关于 Debian", "获取 Debian", "支持", "开发者天地"),
        "footer": "版权所有 © 1997 - 2024 SPI Inc.；请查看许可条款。Debian 是 SPI Inc. 的商标。",
    },
}
TRANSLATION = {"en": "en", "de": "de", "zh": "zh%5fCN"}


def _apt_list(pattern: str) -> str:
    """An apt list's text (``apt-helper cat-file`` reads it whatever its compression)."""
    found = sorted(APT_LISTS.glob(pattern))
    if not found:
        return ""
    return subprocess.run(
        ["/usr/lib/apt/apt-helper", "cat-file", str(found[0])], check=True, capture_output=True
    ).stdout.decode("utf-8", "replace")


def ensure_apt_lists() -> None:
    """The archive's package list and its descriptions in English, German and Chinese (``apt-get update``)."""
    if all(list(APT_LISTS.glob(f"*_bookworm_main_i18n_Translation-{t}.*")) for t in TRANSLATION.values()):
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    print("reading Debian's package descriptions with apt-get update...", file=sys.stderr)
    subprocess.run([*sudo, "apt-get", "update", "-qq", "-o", "Acquire::Languages=en,de,zh_CN"], check=True)


def _stanzas(text: str) -> list[dict[str, str]]:
    found = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        name = None
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and name:
                fields[name] += "\n" + line[1:]
            elif ":" in line:
                name, _, value = line.partition(":")
                fields[name] = value.strip()
        if fields:
            found.append(fields)
    return found


def _description(long: str) -> list[str]:
    """A long description's paragraphs (Debian's format: ``.`` alone separates them)."""
    paragraphs, current = [], []
    for line in long.splitlines():
        if line.strip() == ".":
            paragraphs.append(" ".join(current))
            current = []
        else:
            current.append(line.strip())
    paragraphs.append(" ".join(current))
    return [p for p in paragraphs if p]


def build_catalogue(language: str, folder: Path) -> None:
    """The catalogue's pages in ``language`` under ``folder`` (``<package>.html``), and its index."""
    ensure_apt_lists()
    packages = {
        s["Package"]: s for s in _stanzas(_apt_list("*_bookworm_main_binary-amd64_Packages.*")) if "Package" in s
    }
    descriptions = {}
    for stanza in _stanzas(_apt_list(f"*_bookworm_main_i18n_Translation-{TRANSLATION[language]}.*")):
        text = stanza.get(f"Description-{TRANSLATION[language].replace('%5f', '_')}")
        if text and "Package" in stanza:
            short, _, long = text.partition("\n")
            descriptions[stanza["Package"]] = (short.strip(), _description(long))
    families: dict[str, list[str]] = defaultdict(list)
    for name, stanza in packages.items():
        families[stanza.get("Source", name).split()[0]].append(name)
    chosen = sorted(
        name
        for source, names in families.items()
        if xxhash.xxh32_intdigest(source.encode()) % CATALOGUE_SAMPLE[language] == 0
        for name in names
        if name in descriptions
    )
    words = CATALOGUE_WORDS[language]
    folder.mkdir(parents=True, exist_ok=True)
    by_section: dict[str, list[str]] = defaultdict(list)
    for name in chosen:
        by_section[packages[name].get("Section", "misc")].append(name)
    for name in chosen:
        stanza = packages[name]
        short, paragraphs = descriptions[name]
        related = []
        for field, label in (("Depends", "depends"), ("Recommends", "recommends"), ("Suggests", "suggests")):
            for dependency in stanza.get(field, "").split(","):
                other = dependency.split("|")[0].split("(")[0].split(":")[0].strip()
                if other:
                    other_short = descriptions.get(other, ("", []))[0]
                    related.append(
                        f'<li><dl><dt>{words[label]} <a href="{other}.html">{html.escape(other)}</a> '
                        f"{html.escape(dependency.strip()[len(other) :])}</dt>"
                        f"<dd>{html.escape(other_short)}</dd></dl></li>"
                    )
        similar = [other for other in by_section[stanza.get("Section", "misc")] if other != name][:8]
        body = (
            f'<div id="pdesc"><h2>{html.escape(short)}</h2>'
            + "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
            + "</div>"
            f'<div id="pdeps"><h2>{html.escape(words["related"].format(name=name))}</h2>'
            f'<ul class="uldep">{"".join(related)}</ul></div>'
            f'<div id="pdownload"><h2>{html.escape(words["download"].format(name=name))}</h2><table><tr>'
            f"<th>{words['arch']}</th><th>{words['size']}</th><th>{words['installed']}</th><th>{words['files']}</th>"
            f"</tr><tr><td>{html.escape(stanza.get('Architecture', 'all'))}</td>"
            f"<td>{int(stanza.get('Size', '0')) // 1024} kB</td><td>{stanza.get('Installed-Size', '0')} kB</td>"
            f'<td><a href="{name}/filelist">{words["files"]}</a></td></tr></table></div>'
        )
        side = (
            f'<div id="pmoreinfo"><h2>{html.escape(words["links"].format(name=name))}</h2><ul>'
            f'<li><a href="{html.escape(stanza.get("Homepage", "#"))}">{words["homepage"]}</a></li></ul>'
            f"<h3>{words['maintainer']}</h3><ul><li>{html.escape(stanza.get('Maintainer', ''))}</li></ul>"
            f"<h3>{words['similar']}</h3><ul>"
            + "".join(f'<li><a href="{o}.html">{html.escape(o)}</a></li>' for o in similar)
            + "</ul></div>"
        )
        page = _catalogue_frame(
            words,
            words["title"].format(name=name),
            words["package"].format(name=html.escape(name), version=html.escape(stanza.get("Version", ""))),
            stanza.get("Section", "misc"),
            name,
            side + f'<div id="pcontent">{body}</div>',
        )
        (folder / f"{_file_name(name)}.html").write_text(page, encoding="utf-8")


def _catalogue_frame(words: dict, title: str, heading: str, section: str, name: str, content: str) -> str:
    nav = "".join(f'<li><a href="/{n}">{html.escape(label)}</a></li>' for n, label in enumerate(words["nav"]))
    return (
        f'<!DOCTYPE html><html><head><meta charset="UTF-8"><title>Debian -- {html.escape(title)}</title></head>'
        f'<body><div id="header"><div id="upperheader"><div id="logo"><a href="/">Debian</a></div>'
        f'<p class="section"><a href="/">Packages</a></p></div><div id="navbar"><ul>{nav}</ul></div>'
        f'<p id="breadcrumbs"><a href="/">Packages</a> / <a href="/bookworm/">bookworm</a> / '
        f'<a href="/bookworm/{section}/">{html.escape(section)}</a> / {html.escape(name)}</p></div>'
        f'<div id="content"><h1>{heading}</h1>{content}</div>'
        f'<div id="footer"><hr><p>{html.escape(words["footer"])}</p></div></body></html>'
    )


def _file_name(name: str) -> str:
    return re.sub(r"[^\w.+-]", "_", name)


# --- a wiki of places ----------------------------------------------------------------------------------------

PLACES_WORDS = {
    "en": {
        "stub": "{name} is a {kind} of {country}.",
        "code": "Its ISO 3166-2 code is {code}.",
        "parent": "It lies within {parent}.",
        "see": "See also: the list of subdivisions of {country}.",
        "list_title": "List of subdivisions of {country}",
        "list_lead": "This is a list of the subdivisions of {country}, with their ISO 3166-2 codes and kinds. "
        "The codes are those of the international standard ISO 3166-2, which defines codes for the "
        "names of the principal subdivisions of every country listed in ISO 3166-1. Each code is the "
        "country's two-letter code followed by a separator and up to three letters or digits. The "
        "kinds are the names the standard gives the subdivisions, in the order of the list.",
        "sections": ("Subdivisions", "See also", "References"),
        "references": (
            "ISO 3166-2:2020, Codes for the representation of names of countries and their "
            "subdivisions, Part 2: Country subdivision code. International Organization for "
            "Standardization, Geneva.",
            "ISO 3166 Maintenance Agency, Online Browsing Platform, the country codes and their "
            "subdivisions as the agency publishes them after each newsletter.",
            "Statoids, Administrative divisions of countries, a reference of the divisions of "
            "every country of the world and their codes, compiled from official sources.",
        ),
        "columns": ("Code", "Name", "Kind"),
        "category": "Subdivisions of {country}",
        "stub_notice": "This article about a place in {country} is a stub. You can help by expanding it.",
    },
    "de": {
        "stub": "{name} ist eine Verwaltungseinheit ({kind}) in {country}.",
        "code": "Ihr Code nach ISO 3166-2 ist {code}.",
        "parent": "Sie liegt in {parent}.",
        "see": "Siehe auch: Liste der Verwaltungseinheiten in {country}.",
        "list_title": "Liste der Verwaltungseinheiten in {country}",
        "list_lead": "Dies ist eine Liste der Verwaltungseinheiten in {country} mit ihren Codes nach ISO 3166-2. "
        "Die Codes sind die der internationalen Norm ISO 3166-2, die Codes für die Namen der "
        "wichtigsten Verwaltungseinheiten jedes in ISO 3166-1 aufgeführten Landes festlegt. Jeder Code "
        "besteht aus dem zweibuchstabigen Code des Landes, einem Trennzeichen und bis zu drei "
        "Buchstaben oder Ziffern. Die Arten sind die Namen, die die Norm den Einheiten gibt.",
        "sections": ("Verwaltungseinheiten", "Siehe auch", "Einzelnachweise"),
        "references": (
            "ISO 3166-2:2020, Codes für die Namen von Ländern und deren Untereinheiten, Teil 2: "
            "Codes für Untereinheiten von Ländern. Internationale Organisation für Normung, Genf.",
            "ISO 3166 Maintenance Agency, Online Browsing Platform, die Codes der Länder und ihrer "
            "Untereinheiten, wie die Agentur sie nach jedem Rundschreiben veröffentlicht.",
            "Statoids, Verwaltungsgliederung der Staaten, ein Verzeichnis der Gliederungen aller "
            "Staaten der Welt und ihrer Codes, aus amtlichen Quellen zusammengestellt.",
        ),
        "columns": ("Code", "Name", "Art"),
        "category": "Verwaltungseinheit in {country}",
        "stub_notice": "Dieser Artikel über einen Ort in {country} ist sehr kurz. Du kannst helfen, ihn zu erweitern.",
    },
}
#: The real Wikipedia page whose chrome each language's wiki wears: an article of ordinary size (~1,000 words of
#: chrome), and a long one whose chrome alone (200 languages' links) outweighs a stub or a short list.
WIKI_CHROME = {
    "en": "readability-test-pages/wikipedia/source.html",
    "de": "readability-test-pages/wikipedia-2/source.html",
}


def build_places(language: str, folder: Path, data: Path) -> None:
    """The wiki's stubs (``wiki/<code>.html``) and lists (``wiki/List_<country>.html``) in ``language``."""
    subdivisions = json.loads(ISO_CODES.read_text(encoding="utf-8"))["3166-2"]
    countries = {
        c["alpha_2"]: c["name"]
        for c in json.loads((ISO_CODES.parent / "iso_3166-1.json").read_text(encoding="utf-8"))["3166-1"]
    }
    names = (
        gettext.translation("iso_3166-2", languages=[language], fallback=True).gettext,
        gettext.translation("iso_3166-1", languages=[language], fallback=True).gettext,
    )
    by_code = {s["code"]: s for s in subdivisions}
    named = defaultdict(int)  # a name several places have is told apart in their titles, as wikis do
    for s in subdivisions:
        named[s["name"]] += 1
    kinds_named = defaultdict(int)  # (and by its kind where one country has it twice: a region, a department)
    for s in subdivisions:
        kinds_named[s["code"][:2], s["name"]] += 1
    chrome = (data / WIKI_CHROME[language]).read_bytes()
    folder.mkdir(parents=True, exist_ok=True)
    by_country: dict[str, list[dict]] = defaultdict(list)
    for subdivision in subdivisions:
        by_country[subdivision["code"][:2]].append(subdivision)
    for code, members in sorted(by_country.items()):
        if xxhash.xxh32_intdigest(code.encode()) % PLACES_SAMPLE or len(members) < 3:
            continue
        country = names[1](countries.get(code, code))
        places = [(s["code"], names[0](s["name"]), s["type"]) for s in members]
        (folder / f"List_{code}.html").write_bytes(list_page(chrome, language, country, places))
        for s in members:
            parent = by_code.get(s.get("parent", "") if "-" in s.get("parent", "") else f"{code}-{s.get('parent', '')}")
            title = (
                names[0](s["name"])
                + (f" ({s['type'].lower()})" if kinds_named[code, s["name"]] > 1 else "")
                + (f", {country}" if named[s["name"]] > 1 else "")
            )
            (folder / f"{s['code']}.html").write_bytes(
                stub_page(
                    chrome,
                    language,
                    country,
                    (s["code"], names[0](s["name"]), s["type"]),
                    title,
                    names[0](parent["name"]) if parent is not None else None,
                )
            )


Place = tuple[str, str, str]  # code, name, kind


def list_page(chrome: bytes, language: str, country: str, places: list[Place]) -> bytes:
    """A list article of a family: the same lead but for the country, the same sections and references; its table
    of the country's subdivisions is what the page is about."""
    words = PLACES_WORDS[language]
    rows = "".join(
        f'<tr><td>{code}</td><td><a href="{code}.html">{html.escape(name)}</a></td><td>{html.escape(kind)}</td></tr>'
        for code, name, kind in places
    )
    table = (
        f'<table class="wikitable sortable"><tr>{"".join(f"<th>{c}</th>" for c in words["columns"])}</tr>{rows}</table>'
    )
    sections = words["sections"]
    body = (
        f"<p>{words['list_lead'].format(country=html.escape(country))}</p><h2>{sections[0]}</h2>{table}"
        f'<h2>{sections[1]}</h2><ul><li><a href="#">ISO 3166-2</a></li><li><a href="#">ISO 3166-1</a></li></ul>'
        f'<h2>{sections[2]}</h2><ol class="references">'
        + "".join(f"<li>{html.escape(reference)}</li>" for reference in words["references"])
        + "</ol>"
    )
    return _wiki_page(
        chrome, words["list_title"].format(country=country), body, words["category"].format(country=country)
    )


def stub_page(chrome: bytes, language: str, country: str, place: Place, title: str, parent: str | None) -> bytes:
    """A stub as bots write them: "<name> is a <kind> of <country>.", its code, its parent region, a stub notice."""
    words = PLACES_WORDS[language]
    code, name, kind = place
    sentences = [
        words["stub"].format(
            name=html.escape(name),
            kind=html.escape(kind.lower()),
            country=f'<a href="List_{code[:2]}.html">{html.escape(country)}</a>',
        ),
        words["code"].format(code=code),
    ]
    if parent is not None:
        sentences.append(words["parent"].format(parent=html.escape(parent)))
    body = (
        f"<p>{' '.join(sentences)}</p><p>{words['see'].format(country=html.escape(country))}</p>"
        f'<div role="note" class="metadata plainlinks asbox stub"><p>'
        f"{html.escape(words['stub_notice'].format(country=country))}</p></div>"
    )
    return _wiki_page(chrome, title, body, words["category"].format(country=country))


def _wiki_page(chrome: bytes, title: str, body: str, category: str) -> bytes:
    """Wikipedia's chrome around ``body``: the title, the heading, the content and the category replaced."""
    root = lxml.html.fromstring(chrome)
    root.find(".//title").text = f"{title} - Wikipedia"
    root.get_element_by_id("firstHeading").text = title
    for child in root.get_element_by_id("firstHeading"):
        child.drop_tree()
    content = root.get_element_by_id("mw-content-text")
    for child in list(content):
        content.remove(child)
    content.text = None
    for element in lxml.html.fragments_fromstring(body):
        content.append(element)
    links = root.get_element_by_id("catlinks")
    for child in list(links):
        links.remove(child)
    links.append(
        lxml.html.fragment_fromstring(
            f'<div id="mw-normal-catlinks">Category: <a href="#">{html.escape(category)}</a></div>'
        )
    )
    return lxml.html.tostring(root, encoding="utf-8", doctype="<!DOCTYPE html>")


# --- a Q&A site ------------------------------------------------------------------------------------------------

#: The corpus the Q&A site's questions and answers are: ChatterBot's multilingual dialog corpus (BSD-3-Clause),
#: its wheel fetched from PyPI into ``bench/.cache`` (questions people ask a chat bot, each with its answers, in
#: files by topic).
QUESTIONS_CORPUS = "chatterbot-corpus==1.3.3"
QUESTIONS_LANGUAGES = {"en": "english", "zh": "chinese", "it": "italian"}
QUESTIONS_WORDS = {
    "en": {
        "site": "Ask Anything",
        "nav": ("Questions", "Tags", "Users", "Unanswered"),
        "asked": "asked",
        "answers": "{n} Answers",
        "answered": "answered",
        "related": "Related questions",
        "votes": "votes",
        "search": "Search…",
        "tagged": "Tagged",
        "footer": "Site design / logo © 2024; user contributions licensed under CC BY-SA.",
    },
    "zh": {
        "site": "问答社区",
        "nav": ("问题", "标签", "用户", "未回答"),
        "asked": "提问于",
        "answers": "{n} 个回答",
        "answered": "回答于",
        "related": "相关问题",
        "votes": "票",
        "search": "搜索…",
        "tagged": "标签",
        "footer": "网站设计 / 标志 © 2024；用户贡献的内容采用 CC BY-SA 许可协议。",
    },
    "it": {
        "site": "Chiedi pure",
        "nav": ("Domande", "Tag", "Utenti", "Senza risposta"),
        "asked": "chiesto",
        "answers": "{n} risposte",
        "answered": "risposto",
        "related": "Domande correlate",
        "votes": "voti",
        "search": "Cerca…",
        "tagged": "Tag",
        "footer": "Design del sito / logo © 2024; contributi degli utenti con licenza CC BY-SA.",
    },
}
USERS = (
    "alice",
    "bmiller",
    "chen.wei",
    "dario_r",
    "emma.k",
    "farid",
    "gopal",
    "hana",
    "ivan.p",
    "julia",
    "kenji",
    "lucia",
    "marco.b",
    "nadia",
    "oscar",
    "priya",
    "quentin",
    "rosa",
    "sven",
    "tariq",
)


def corpus_wheel(cache: Path) -> Path:
    """The corpus's wheel (``pip download`` once into ``cache``)."""
    found = sorted(cache.glob("chatterbot_corpus-*.whl"))
    if not found:
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(cache), QUESTIONS_CORPUS],
            check=True,
        )
        found = sorted(cache.glob("chatterbot_corpus-*.whl"))
    return found[0]


def build_questions(language: str, folder: Path, cache: Path) -> None:
    """The Q&A site's question pages in ``language`` (``q/<n>.html``): one per question (the same question asked in
    several topics is one page with all its answers), in its topic's tag, beside its topic's other questions."""
    import zipfile

    import yaml

    questions: dict[str, tuple[str, str, list[str]]] = {}  # key -> (question, topic, answers)
    with zipfile.ZipFile(corpus_wheel(cache)) as wheel:
        for name in sorted(wheel.namelist()):
            if f"/data/{QUESTIONS_LANGUAGES[language]}/" not in name or not name.endswith(".yml"):
                continue
            topic = Path(name).stem.replace("_", " ")
            for conversation in yaml.safe_load(wheel.read(name)).get("conversations") or []:
                question, *answers = (" ".join(str(line).split()) for line in conversation)
                key = question.lower().rstrip("?？ ")
                if not key or not answers:
                    continue
                found = questions.setdefault(key, (question, topic, []))
                found[2].extend(a for a in answers if a not in found[2])
    words = QUESTIONS_WORDS[language]
    numbered = {key: n for n, key in enumerate(sorted(questions), 1)}
    by_topic: dict[str, list[str]] = defaultdict(list)
    for key, (_, topic, _) in questions.items():
        by_topic[topic].append(key)
    folder.mkdir(parents=True, exist_ok=True)
    for key, (question, topic, answers) in questions.items():
        n = numbered[key]
        seed = xxhash.xxh32_intdigest(key.encode())
        related = [
            other
            for other in sorted(by_topic[topic], key=lambda o: xxhash.xxh32_intdigest(f"{key}/{o}".encode()))
            if other != key
        ][:8]
        answered = "".join(
            f'<div class="answer" id="a{n}-{i}"><div class="votecell">'
            f'<span class="vote-count">{(seed >> i) % 40}</span>'
            f' {words["votes"]}</div><div class="answercell"><div class="post-text"><p>{html.escape(answer)}</p></div>'
            f'<div class="user-info">{words["answered"]} 2024-{(seed >> i) % 12 + 1:02}-{(seed >> 2 * i) % 28 + 1:02}'
            f' <a href="/users/{USERS[(seed >> i) % len(USERS)]}">{USERS[(seed >> i) % len(USERS)]}</a>'
            "</div></div></div>"
            for i, answer in enumerate(answers)
        )
        main = (
            f'<div id="question-header"><h1><a href="{n}.html">{html.escape(question)}</a></h1></div>'
            f'<div class="question"><div class="post-text"><p>{html.escape(question)}</p></div>'
            f'<div class="post-taglist">{words["tagged"]} <a class="post-tag" href="/tags/{html.escape(topic)}">'
            f'{html.escape(topic)}</a></div><div class="user-info">{words["asked"]} 2023-{seed % 12 + 1:02}-'
            f'{seed % 28 + 1:02} <a href="/users/{USERS[seed % len(USERS)]}">{USERS[seed % len(USERS)]}</a></div></div>'
            f'<div id="answers"><h2>{words["answers"].format(n=len(answers))}</h2>{answered}</div>'
        )
        side = (
            f'<div id="sidebar"><div class="module related"><h4>{words["related"]}</h4><ul>'
            + "".join(f'<li><a href="{numbered[o]}.html">{html.escape(questions[o][0])}</a></li>' for o in related)
            + "</ul></div></div>"
        )
        nav = "".join(f'<li><a href="/{label}">{html.escape(label)}</a></li>' for label in words["nav"])
        page = (
            f'<!DOCTYPE html><html><head><meta charset="UTF-8"><title>{html.escape(question)} - '
            f'{words["site"]}</title></head><body><header class="top-bar"><a class="logo" href="/">{words["site"]}'
            f'</a><form id="search"><input name="q" placeholder="{words["search"]}"></form></header>'
            f'<div class="container"><nav id="left-sidebar"><ul>{nav}</ul></nav><div id="content">'
            f'<div id="mainbar">{main}</div>{side}</div></div><footer id="footer"><p>{html.escape(words["footer"])}'
            f"</p></footer></body></html>"
        )
        (folder / f"{n}.html").write_text(page, encoding="utf-8")
