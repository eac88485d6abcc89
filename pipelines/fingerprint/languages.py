"""Which languages a page's own text is written in, from its blocks' scripts and function words.

Two pages whose own texts are not written in the same languages are not one document: a partial translation
(some paragraphs translated, the rest still in the original's language) holds text in a language its original
lacks, however many of its words the two share.  An untranslated copy under another language's folder is in
the same languages as its original, and stays its duplicate.

A block of at least ``MIN_BLOCK_WORDS`` tokens is in the script it is mostly written in (Han, kana, Hangul,
Cyrillic, Greek, Arabic, Hebrew, Thai, Devanagari), or, in Latin script, in the language whose common function
words it holds the most of: words of one language only (``the``, ``und``, ``og``), not those several share (``la``,
``de``, ``on``) nor single letters, at least two, and twice as many as any other language's (else it says nothing:
a headline of names and numbers is no language).  A page is in the languages of its blocks: one
translated sentence is a sentence the original lacks.  Languages that share nearly all
their function words are one (Danish and Norwegian Bokmål, Czech and Slovak): their texts differ anyway.
Nothing here is learned: the same text, the same languages.
"""

from __future__ import annotations

from .content import HAN_RANGES
from .textloops import block_languages

#: Blocks with fewer tokens are not classified (labels, captions, names).
MIN_BLOCK_WORDS = 8

#: Common function words of languages written in Latin script, lower-cased as ``content.tokens`` gives them.
FUNCTION_WORDS: dict[str, str] = {
    "en": "the and of to is in that it for was with are this be by not from have which or an you can will on as at he "
    "his she her they we i has had were but all their there what when who would about into more than been after "
    "said its our your if so do up out",
    "de": "der die und das ist nicht mit den ein eine auf sich dem des auch werden wird kann oder für sind bei "
    "nach wenn",
    "fr": "le la les et est des une un du dans pour que qui sur pas sont avec ce cette par au aux vous peut",
    "es": "el la los las y es que del en una por con para se al como más pero sus este esta puede son",
    "pt": "o a os as e é que do da dos das em um uma para com não por se no na mais pode são",
    "it": "il lo la gli le e è che di del della un una per con non sono nel alla dei anche può questo",
    "nl": "de het een en van is dat niet op te voor zijn met die worden wordt ook kan aan bij deze er naar",
    "da/nb": "og det er at en til af av på med som ikke for kan den har de der fra skal være eller vil hvis ved",
    "sv": "och det är att en till av på med som inte för kan den har de från ska vara eller om också",
    "ca": "el la els les i és que de del una un per amb no als es en al com més pot aquest són",
    "cs/sk": "a je se sa na v že to s z do pro pre jako ako není nie jsou sú by ale nebo alebo které ktoré může "
    "môže tak",
    "pl": "i w się na nie z do to że jest jak o po są przez dla oraz może być lub tym który",
    "ro": "și de la în este a cu pe din care un o nu să pentru mai sau sunt ca poate acest această",
    "hr": "i je u se na da za su od ne koji kao ili može to biti sa iz ako što ove kada",
    "id": "dan yang di ini itu untuk dengan tidak dari dalam akan pada adalah juga atau bisa dapat ke oleh ada",
    "tr": "ve bir bu da de için ile olarak olan daha ne gibi çok ama veya değil sonra kadar olduğu her",
    "vi": "và của là có các được cho không một trong với những này để khi từ người đã thể sẽ",
    "fi": "ja on ei se että kuin ovat mutta tai joka sekä myös voi jos niin olla tämä kun",
    "hu": "a az és hogy nem egy is van meg de már csak el ez mint vagy lehet még ha",
}


def _distinctive_words() -> dict[str, str]:
    """Function word -> its language, for the words of one language only, of two letters or more (a letter
    alone is as often a piece of an abbreviation or a contraction: ``U.S.``, ``here's``)."""
    found: dict[str, set[str]] = {}
    for language, words in FUNCTION_WORDS.items():
        for word in words.split():
            found.setdefault(word, set()).add(language)
    return {word: next(iter(languages)) for word, languages in found.items() if len(languages) == 1 and len(word) > 1}


_LANGUAGE_OF = _distinctive_words()

#: Scripts that name their languages well enough, by code point ranges (first match).
SCRIPTS = (
    ("ja", ((0x3040, 0x30FF),)),  # kana: Japanese (its Han too, when a block holds kana)
    ("ko", ((0xAC00, 0xD7AF), (0x1100, 0x11FF), (0x3130, 0x318F))),
    ("han", HAN_RANGES),
    ("cyrillic", ((0x0400, 0x052F),)),
    ("greek", ((0x0370, 0x03FF), (0x1F00, 0x1FFF))),
    ("arabic", ((0x0600, 0x06FF), (0x0750, 0x077F), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF))),
    ("hebrew", ((0x0590, 0x05FF),)),
    ("thai", ((0x0E00, 0x0E7F),)),
    ("devanagari", ((0x0900, 0x097F),)),
)


#: Every language and script a page can be said to be in, in the order of their numbers and bits.
LANGUAGES = (*FUNCTION_WORDS, *(name for name, _ in SCRIPTS))
_NUMBER_OF_WORD = {word: LANGUAGES.index(language) for word, language in _LANGUAGE_OF.items()}
_SCRIPT_RANGES = [(low, high, LANGUAGES.index(name)) for name, ranges in SCRIPTS for low, high in ranges]


def block_language(tokens: list[str]) -> str | None:
    """The language a block is written in, or None when it is too short or its words do not say."""
    number = _numbers([tokens])[0]
    return LANGUAGES[number] if number >= 0 else None


def languages(blocks: list[list[str]]) -> list[str]:
    """The languages a text given as blocks of tokens is written in (sorted)."""
    return sorted({LANGUAGES[number] for number in _numbers(blocks) if number >= 0})


def language_bits(found: list[str]) -> int:
    """Languages as a bit set (bit n: ``LANGUAGES[n]``); 0 for none known."""
    return sum(1 << LANGUAGES.index(language) for language in found)


def _numbers(blocks: list[list[str]]) -> list[int]:
    """Each block's language as its number in ``LANGUAGES`` (-1: none), counted in compiled code
    (``textloops.block_languages``)."""
    return block_languages(
        blocks,
        _NUMBER_OF_WORD,
        _SCRIPT_RANGES,
        len(LANGUAGES),
        LANGUAGES.index("han"),
        LANGUAGES.index("ja"),
        MIN_BLOCK_WORDS,
    )
