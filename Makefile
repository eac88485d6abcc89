# `make demo` and `make test` set up everything on a fresh machine.
VENV := .venv
PYTHON := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: demo test test-fast lint dist clean redis-server chromium java wget compiled screenshots

$(INSTALLED): requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	# the project itself, editable: scrapy_simhash_dedup importable, .venv/bin/simhash-dedup
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

# The tree walk is compiled (Cython over lxml's C API) next to its source; rebuilt when it changed.
compiled: $(INSTALLED)
	$(PYTHON) setup.py --quiet build_ext --inplace

demo: compiled
	$(PYTHON) -m crawler.demo

# The docs' pictures of the report (docs/report-*.png), made again from a fresh demo in Chromium.
screenshots: demo chromium
	$(PYTHON) -m tools.screenshots

# Then the crawl tests again, shorter, on the lowest Scrapy pyproject.toml declares (and the last Twisted that
# Scrapy allows), put first on PYTHONPATH over the pinned ones.
LOWEST_SCRAPY := $(shell sed -n 's/.*"Scrapy>=\([0-9.]*\)".*/\1/p' pyproject.toml)
LOWEST_TWISTED := 25.5.0
LOWEST := $(CURDIR)/.scrapy-lowest
LOWEST_TESTS := tests/test_crawl.py tests/test_scrapy_routes.py \
	tests/test_real_site.py::test_a_spider_yielding_several_items_per_page_keeps_all_of_a_kept_page_and_none_of_a_dropped_one \
	tests/test_real_site.py::test_links_not_followed_are_logged_as_scrapy_s_duplicate_filter_logs_requests \
	tests/test_real_site.py::test_a_rerun_s_drops_are_logged_as_scrapy_s_duplicate_filter_logs_requests \
	tests/test_real_site.py::test_a_second_crawl_at_once_is_refused_and_touches_nothing \
	tests/test_real_site.py::test_a_wrong_setting_is_one_error_line_and_exit_status_1 \
	tests/test_persistence.py::test_stopped_crawl_resumed_with_jobdir_keeps_no_near_duplicate

# The suite runs on every core, each test file on one worker (its module fixtures built once).
test: lint compiled redis-server chromium java wget $(LOWEST)/.installed
	$(PYTHON) -m pytest -q -n auto --dist loadfile
	PYTHONPATH=$(LOWEST) SIMHASH_DEDUP_TEST_SCRAPY=$(LOWEST_SCRAPY) $(PYTHON) -m pytest -q -m "not heavy" $(LOWEST_TESTS)

# What a developer runs between edits: no service started (Redis, a cluster, Spark, a browser), nothing slow.
test-fast: lint compiled
	$(PYTHON) -m pytest -q -n auto --dist loadfile -m "not (redis or cluster or spark or browser or slow or heavy)"

# The field's tooling: ruff's lint and format check (pyproject.toml [tool.ruff]), mypy over the package.
lint: $(INSTALLED)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

$(LOWEST)/.installed: pyproject.toml $(INSTALLED)
	rm -rf $(LOWEST)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --no-deps --target $(LOWEST) \
		"scrapy==$(LOWEST_SCRAPY)" "twisted==$(LOWEST_TWISTED)"
	touch $@

# The sdist and this machine's wheel in dist/ (the release's wheels for every platform: cibuildwheel, see
# pyproject.toml and .github/workflows/wheels.yml), built from the checkout's tracked files as a package index
# builds them: the wheel from the sdist, in an isolated environment holding only the build requirements
# (pyproject.toml), its extension modules stripped; then twine checks both. Needs no development environment:
# a small one of its own (.build-venv) holds build and twine.
BUILD_VENV := .build-venv
dist:
	rm -rf dist
	test -x $(BUILD_VENV)/bin/python || python3 -m venv $(BUILD_VENV)
	$(BUILD_VENV)/bin/python -m pip install --quiet --disable-pip-version-check build==1.6.1 twine==6.2.0
	LDFLAGS="$$LDFLAGS -Wl,--strip-all" $(BUILD_VENV)/bin/python -m build --outdir dist . >/dev/null
	$(BUILD_VENV)/bin/python -m twine check --strict dist/*

# The tests start their own redis-server on a free port; install it from Debian's packages when missing.
redis-server:
	@command -v redis-server >/dev/null || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server || command -v redis-server; }

# The report's test opens it in a real browser: Debian's chromium, installed when missing.
chromium:
	@command -v chromium >/dev/null || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium || command -v chromium; }

# The Spark job's tests run Spark in local mode: a Java runtime, Debian's OpenJDK 17, installed when missing.
java:
	@command -v java >/dev/null || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openjdk-17-jre-headless || command -v java; }

# Batch mode's tests read WARC files as archivists write them: crawled by GNU wget, installed when missing.
wget:
	@command -v wget >/dev/null || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wget || command -v wget; }

clean:
	rm -rf $(VENV) $(BUILD_VENV) $(LOWEST) .pytest_cache demo-output .scrapy build dist pipelines/*/*.so pipelines/*/*.c pipelines/*/*.cpp
