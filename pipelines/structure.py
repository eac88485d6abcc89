"""Structure features: the DOM tag tree, each element weighted 0.45 ** depth.

Features are the tag names and the parent>child tag pairs, summed over every
occurrence; the pairs tell a ``ul>li`` list from a ``table>tr`` list that has
the same tags.  The walk is iterative, so any nesting depth works.
"""

from __future__ import annotations

from collections import defaultdict

import lxml.etree
import lxml.html

DEFAULT_DECAY = 0.45


def structure_features(root: lxml.html.HtmlElement, decay: float = DEFAULT_DECAY) -> dict[str, float]:
    """Feature -> summed weight over the tree rooted at ``root`` (depth 0)."""
    weights: dict[str, float] = defaultdict(float)
    path: list[str] = []
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        if event == "end":
            path.pop()
            continue
        tag = element.tag if isinstance(element.tag, str) else "#node"
        weight = decay ** len(path)
        weights[tag] += weight
        if path:
            weights[f"{path[-1]}>{tag}"] += weight
        path.append(tag)
    return dict(weights)
