# `make demo` and `make test` set up everything on a fresh machine.
VENV := .venv
PYTHON := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: demo test clean redis-server

$(INSTALLED): requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

demo: $(INSTALLED)
	$(PYTHON) -m crawler.demo

test: $(INSTALLED) redis-server
	$(PYTHON) -m pytest -q

# The tests start their own redis-server on a free port; install it from Debian's packages when missing.
redis-server:
	@command -v redis-server >/dev/null || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server || command -v redis-server; }

clean:
	rm -rf $(VENV) .pytest_cache demo-output .scrapy
