"""What a page declares as its canonical URL: a ``<link rel="canonical">`` in its ``<head>`` (read by the
fingerprint's walk of the tree), or a ``Link: <...>; rel="canonical"`` header of its response.  Whether it is
believed is the guards' choice (``guards.canonical``)."""

from __future__ import annotations

import re
from urllib.parse import urljoin

#: One link of a ``Link`` header: ``<target>; param; param``.
_LINK = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,]*)*)")
_REL = re.compile(r"""\brel\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s;,]+))""", re.IGNORECASE)


def declared_link(link: tuple[str | None, str] | None) -> str | None:
    """The canonical URL of a walk's ``PageText.canonical_link`` (``<base href>`` and ``href``), joined."""
    return None if link is None else _joined(*link)


def _joined(base: str | None, href: str) -> str:
    """``href`` against ``base``; as it is when there is none or it cannot be parsed (a broken IPv6 address)."""
    try:
        return urljoin(base, href) if base else href
    except ValueError:
        return href


def declared_in_header(values: list[bytes]) -> str | None:
    """The target of the first ``rel="canonical"`` link of a response's ``Link`` headers."""
    for value in values:
        for target, params in _LINK.findall(value.decode("latin-1")):
            for rel in _REL.finditer(params):
                if "canonical" in "".join(rel.groups("")).lower().split():
                    return target.strip() or None
    return None
