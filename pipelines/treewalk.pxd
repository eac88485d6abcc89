"""The walk's results, as the compiled main-content choice (``readability.pyx``) reads them."""


cdef class Block:
    cdef readonly str text  # outside links
    cdef readonly str link_text
    cdef readonly str prose  # all of it in document order, links in place
    cdef readonly str own  # what the own text reads of it: its prose, or for a row of links its text outside them
    cdef readonly int owner  # the block-level element holding it (its number in ``PageText.nodes``)
    cdef readonly int tag_furniture  # the innermost furniture element by tag (nav, aside...) around it, -1 if none
    cdef readonly int named_furniture  # the innermost element named as furniture (class, id or role), -1 if none
    cdef readonly int ad  # the innermost element named as an advertisement around it, -1 if none
    cdef readonly bint leaf  # the owner holds no other block: the block is its paragraph, scored from its parent up


cdef class Node:
    cdef readonly str tag
    cdef readonly object class_  # the ``class`` attribute, None when it has none
    cdef readonly object id_
    cdef readonly int parent  # the block-level element holding it (its number), -1 for the root
    cdef readonly int tag_furniture  # the innermost furniture element by tag around it, itself included, -1 if none
    cdef readonly int named_furniture  # the same for furniture named by class, id or role
    cdef readonly int ad  # the same for an element named as an advertisement (furniture by tag too)
    cdef readonly long chars  # visible characters inside it, outside links and in links
    cdef readonly long link_chars
    cdef readonly int end  # the elements inside it are numbered up to ``end - 1``
    cdef readonly bint leaf  # it holds no other block-level element
