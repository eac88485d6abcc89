"""When a page is the same as a kept one: by its fingerprints (``policy``: the rule, the answer ``Match``;
``matcher``: the kept pages' rows and the decision against them, the part every store holds; ``index`` with
``indexloops.pyx``: the pages within a distance), among which pages (``scope``: the crawl, a site or a host;
``scoped``: a matcher per site, under a memory budget), by its URL (``urlrules``: learned rewrite rules, known
URLs), and the records of those decisions (``decision_log``: the decision log's rows).

May import: ``fingerprint``.
"""
