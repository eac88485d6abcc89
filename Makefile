# `make demo` and `make test` set up everything on a fresh machine.
VENV := .venv
PYTHON := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: demo test clean

$(INSTALLED): requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

demo: $(INSTALLED)
	$(PYTHON) -m crawler.demo

test: $(INSTALLED)
	$(PYTHON) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache demo-output .scrapy
