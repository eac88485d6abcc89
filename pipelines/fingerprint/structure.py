"""Structure features: the DOM tag tree, each element weighted 0.45 ** depth.

Features are the tag names and the parent>child tag pairs, summed over every
occurrence; the pairs tell a ``ul>li`` list from a ``table>tr`` list that has
the same tags.  They are summed by the walk that also reads the page's text
(:mod:`scrapy_simhash_dedup.fingerprint.treewalk`): one pass over the tree serves both fingerprints.
"""

from __future__ import annotations

#: The weight of an element against its parent's.
DEFAULT_DECAY = 0.45
