"""Which languages a page's own text is written in: by script, or by function words of one language only."""

from __future__ import annotations

import tarfile

import pytest

from scrapy_simhash_dedup.fingerprint.content import PageText, tokens
from scrapy_simhash_dedup.fingerprint.document import load
from scrapy_simhash_dedup.fingerprint.languages import LANGUAGES, block_language, language_bits, languages

from .conftest import DEMO_SITE


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("The package manager keeps a list of the packages that are installed on the system.", "en"),
        ("Ubuntu heeft een groot publiek bereikt in het gewone volk, miljoenen gebruikers werden aangetrokken.", "nl"),
        ("Le gestionnaire de paquets tient une liste des paquets qui sont installés sur le système.", "fr"),
        ("Der Paketmanager führt eine Liste der Pakete, die auf dem System installiert sind und nicht.", "de"),
        ("Správce balíčků udržuje seznam balíčků, které jsou v systému nainstalovány a není to jako.", "cs/sk"),
        ("今天北京天气晴朗，最高气温二十五度，市民纷纷走出家门，到公园散步游玩。", "han"),
        ("パッケージマネージャーはシステムにインストールされたパッケージの一覧を保持します。", "ja"),
        ("Менеджер пакетов хранит список пакетов, установленных в системе, и их версии тоже.", "cyrillic"),
    ],
)
def test_a_block_is_in_its_script_or_the_language_of_its_function_words(text: str, language: str) -> None:
    assert block_language(tokens(text)) == language


@pytest.mark.parametrize(
    "text",
    [
        "The U.S. labor force is still shrinking: here's why",  # single letters of abbreviations are no Czech
        "Hurricane Matthew now a Category 4 storm forces evacuations as it approaches Florida",  # 'a', 'as': shared
        "Consider what Monty said on CNN on Thursday afternoon",  # 'on' is Finnish too
        "Port Tobacco River Conservancy needs volunteers, call 301 392 9362",  # names and numbers
    ],
)
def test_english_with_letters_and_shared_words_is_never_taken_for_another_language(text: str) -> None:
    """Words that several languages share, and single letters, say nothing: at worst the block is in none."""
    assert block_language(tokens(text)) in (None, "en")
    assert block_language(tokens("Too short to say")) is None  # under MIN_BLOCK_WORDS tokens


def handbook_languages(language: str, name: str) -> list[str]:
    with tarfile.open(DEMO_SITE) as archive:
        html = archive.extractfile(f"html/{language}/{name}").read()
    return languages(PageText.read(load(html, 1 << 30).root).own_blocks()[1:])


def test_a_partial_translation_is_in_two_languages_and_an_untranslated_copy_in_its_original_s() -> None:
    """The Debian handbook (the demo site): the Danish front page's introduction is Danish, its table of contents
    English; the Danish chapter 5 is English but for its heading; Chinese chapters are Chinese."""
    assert handbook_languages("da-DK", "index.html") == ["da/nb", "en"]
    assert handbook_languages("en-US", "index.html") == ["en"]
    assert handbook_languages("da-DK", "packaging-system.html") == handbook_languages("en-US", "packaging-system.html")
    assert "han" in handbook_languages("zh-CN", "packaging-system.html")
    assert language_bits(["en", "han"]) == (1 << LANGUAGES.index("en")) | (1 << LANGUAGES.index("han"))
    assert language_bits([]) == 0 and len(LANGUAGES) <= 32  # four bytes of the sketch
