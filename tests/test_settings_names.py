"""Names changed in 0.2, accepted for one release: each old name still works, with one ScrapyDeprecationWarning
that names the new one (Scrapy's own pattern)."""

from __future__ import annotations

import pytest
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.settings import Settings
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from scrapy_simhash_dedup import SimhashDedupDownloaderMiddleware, SimhashDedupSpiderMiddleware
from scrapy_simhash_dedup.crawl.settings import DedupSettings


def test_the_log_size_is_read_under_its_old_name_with_a_warning() -> None:
    with pytest.warns(
        ScrapyDeprecationWarning, match="SIMHASH_DEDUP_DECISIONS is deprecated, use SIMHASH_DEDUP_LOG_SIZE"
    ):
        old = DedupSettings.from_settings(Settings({"SIMHASH_DEDUP_DECISIONS": 7}))
    assert old.decisions == 7
    assert DedupSettings.from_settings(Settings({"SIMHASH_DEDUP_LOG_SIZE": 9})).decisions == 9
    both = Settings({"SIMHASH_DEDUP_LOG_SIZE": 9, "SIMHASH_DEDUP_DECISIONS": 7})
    assert DedupSettings.from_settings(both).decisions == 9  # the new name wins


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("SimhashDedupPageMiddleware", SimhashDedupSpiderMiddleware),
        ("SimhashDedupRequestMiddleware", SimhashDedupDownloaderMiddleware),
    ],
)
def test_a_middleware_under_its_old_name_is_the_new_one_with_a_warning(old: str, new: type) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_DEDUP_WORKERS": 0})
    deprecated = load_object(f"scrapy_simhash_dedup.{old}")
    warned = f"{old} is deprecated, instantiate scrapy_simhash_dedup.{new.__name__} instead"
    with pytest.warns(ScrapyDeprecationWarning, match=warned):
        middleware = deprecated.from_crawler(crawler)
    assert isinstance(middleware, new)


def test_items_are_counted_under_their_new_stat_names_only() -> None:
    """``kept`` and ``dropped`` counted items beside ``pages_kept``/``pages_dropped``: now ``items_kept`` and
    ``items_dropped`` (``items_dropped/<reason>``), and the old names are no longer in the stats."""
    from scrapy_simhash_dedup import SimhashDuplicate

    from .pages import real_page
    from .test_pipeline import make_pipeline, process, stat

    pipeline = make_pipeline()
    article = real_page("newspaper-theatlanticcities.com1")
    process(pipeline, {"url": "https://a.test/1", "html": article})
    with pytest.raises(SimhashDuplicate):
        process(pipeline, {"url": "https://a.test/copy", "html": article})
    new = (stat(pipeline, "items_kept"), stat(pipeline, "items_dropped"), stat(pipeline, "items_dropped/content"))
    old = (stat(pipeline, "kept"), stat(pipeline, "dropped"), stat(pipeline, "dropped/content"))
    assert new == (1, 1, 1) and old == (None, None, None)


def test_a_run_recorded_under_the_old_stat_names_reads_under_the_new() -> None:
    from scrapy_simhash_dedup.crawl.stats import current_names

    recorded_before = {"checked": 3, "kept": 2, "dropped": 1, "dropped/content": 1, "pages_kept": 2}
    assert current_names(recorded_before) == {
        "checked": 3,
        "items_kept": 2,
        "items_dropped": 1,
        "items_dropped/content": 1,
        "pages_kept": 2,
    }
    recorded_now = {"items_kept": 5, "items_dropped/both": 2}
    assert current_names(recorded_now) == recorded_now


def test_a_borderline_keep_on_the_structure_says_structure_apart_not_structure() -> None:
    """Mode "both": the same text under another structure is kept (borderline) with the reason
    ``structure_apart``; ``structure`` is only ever a drop matched on the structure."""
    from scrapy_simhash_dedup import Fingerprinter
    from scrapy_simhash_dedup.matching.policy import Mode, Policy

    from .pages import real_page

    page = Fingerprinter().fingerprint(real_page("newspaper-theatlanticcities.com1"), "https://a.test/1")
    both = Policy(mode=Mode.BOTH)
    assert both.content_verdict(0, (page.sketch, page.sketch), False, False, 40) == ("structure_apart", False)
    assert both.content_verdict(0, (page.sketch, page.sketch), False, False, 0) == ("both", True)
