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
    with pytest.warns(ScrapyDeprecationWarning,
                      match="SIMHASH_DEDUP_DECISIONS is deprecated, use SIMHASH_DEDUP_LOG_SIZE"):
        old = DedupSettings.from_settings(Settings({"SIMHASH_DEDUP_DECISIONS": 7}))
    assert old.decisions == 7
    assert DedupSettings.from_settings(Settings({"SIMHASH_DEDUP_LOG_SIZE": 9})).decisions == 9
    both = Settings({"SIMHASH_DEDUP_LOG_SIZE": 9, "SIMHASH_DEDUP_DECISIONS": 7})
    assert DedupSettings.from_settings(both).decisions == 9  # the new name wins


@pytest.mark.parametrize(("old", "new"), [("SimhashDedupPageMiddleware", SimhashDedupSpiderMiddleware),
                                          ("SimhashDedupRequestMiddleware", SimhashDedupDownloaderMiddleware)])
def test_a_middleware_under_its_old_name_is_the_new_one_with_a_warning(old: str, new: type) -> None:
    crawler = get_crawler(settings_dict={"SIMHASH_DEDUP_WORKERS": 0})
    deprecated = load_object(f"scrapy_simhash_dedup.{old}")
    warned = f"{old} is deprecated, instantiate scrapy_simhash_dedup.{new.__name__} instead"
    with pytest.warns(ScrapyDeprecationWarning, match=warned):
        middleware = deprecated.from_crawler(crawler)
    assert isinstance(middleware, new)
