# The human interface: make run, make test (make test-fast: no browser, no worker), make lint, make bench,
# make demo (make demo-file rebuilds its file).
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
HOST ?= 127.0.0.1
PORT ?= 8000
# Python caches what it compiles (__pycache__/, ignored by git) even where the environment asks it
# not to: each of the suite's processes (pytest-xdist's, the workers and servers the tests start)
# would otherwise compile the app and rewrite the tests' assertions again, 20 s of a collection
# that takes 11 s from the cache.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install pdf-libs browser run migrate demo demo-file test test-quick test-browser test-sqlite test-fast lint format bench clean messages screenshots

install: pdf-libs $(VENV)/.installed

# The report's PDF: WeasyPrint draws with Debian's Pango and its fonts; poppler-utils reads a PDF
# back (its tests, and the screenshot of its first page). Installed when missing and we may.
PDF_PACKAGES := libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core poppler-utils
pdf-libs:
	@command -v dpkg >/dev/null 2>&1 || exit 0; missing=""; \
	  for p in $(PDF_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; \
	    else echo "missing:$$missing: the report's PDF needs them (sudo apt-get install$$missing)"; fi; fi

# pip would compile the bytecode of every file it installs, on one core (half of an install's 80 s);
# compiled all afterwards on both cores, they cost 44 s of CPU (25 s). Python compiles only the
# modules a process imports, once (`unexport PYTHONDONTWRITEBYTECODE` above lets it keep them):
# 5 s of CPU for all the suite collects, so nothing is compiled here.
$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -r requirements-dev.txt
	touch $@

# Browser tests drive Debian's Chromium headless shell (tests/chromium.py says why), the
# slow-clients test runs Debian's nginx in front of gunicorn; install them when they are missing
# and we may.
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 && [ -x /usr/sbin/nginx ] || { \
	  if [ "$$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq chromium-headless-shell nginx >/dev/null; \
	  else echo "chromium-headless-shell or nginx is missing: their tests will be skipped (sudo apt-get install chromium-headless-shell nginx)"; fi; }

migrate: install
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py load_demo

# Rebuild demo/campaign.jsonl (committed) from its material in demo/data, after editing the material.
demo-file: install
	$(PY) -m demo.build

# Web server and one Celery worker on the embedded defaults (SQLite, filesystem broker).
# Ctrl-C reaches the web server; the worker runs in a process group of its own (setsid), so that
# it is stopped in order: TERM (warm shutdown: running tasks may finish) for WORKER_GRACE seconds,
# then QUIT (cold shutdown: unfinished tasks go back to the queue, they are acks_late) for 3 s,
# then KILL to the whole group. A task stuck in warm shutdown can no longer hang `make run`.
WORKER_GRACE ?= 10
run: demo
	@echo "Starting the worker and the web server on http://$(HOST):$(PORT)/ (Ctrl-C stops both)"
	@setsid $(VENV)/bin/celery -A config worker --loglevel=INFO --concurrency=2 & worker=$$!; \
	  alive() { kill -0 $$worker 2>/dev/null; }; \
	  within() { n=$$1; while [ $$n -gt 0 ] && alive; do sleep 1; n=$$((n - 1)); done; ! alive; }; \
	  stop() { \
	    trap - EXIT INT TERM; \
	    kill -TERM $$worker 2>/dev/null; \
	    within $(WORKER_GRACE) || { echo "worker still busy: cold shutdown"; kill -QUIT $$worker 2>/dev/null; }; \
	    within 3 || echo "worker killed"; \
	    kill -KILL -$$worker 2>/dev/null; wait $$worker 2>/dev/null; true; }; \
	  trap stop EXIT INT TERM; \
	  $(PY) manage.py runserver $(HOST):$(PORT)

# The whole suite: the tests without a browser or a worker process (on $(TEST_WORKERS) processes:
# they keep the cores busy), then the browser and worker tests, which start servers and processes
# of their own and spend much of their time waiting for them (on $(BROWSER_WORKERS) processes, so
# that one's waits are another's work). Each pytest-xdist process has its own test database, live
# server port, broker queue and Redis database; a module's tests go to one process (--dist
# loadfile), which builds once what its module-scoped fixtures share (module_transaction,
# shared_live_server).
TEST_WORKERS ?= 2
BROWSER_WORKERS ?= 3
test: test-quick test-browser

test-quick: install
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile -m "not e2e and not worker"

# The modules that name the browser or the worker mark: the only ones the browser part collects
# (each of its processes collected all 200 to run the 81 tests marked: 11.4 s of CPU a process
# against 5.4). tests/conftest.py refuses a test so marked in a module that does not name the mark.
BROWSER_MODULES = $(shell grep -rlE --include='test_*.py' '\bmark\.(e2e|worker)\b' tests | sort)
test-browser: install browser
	$(VENV)/bin/pytest -n $(BROWSER_WORKERS) --dist loadfile -m "e2e or worker" $(BROWSER_MODULES)

# What SQLite and the filesystem broker (the set-up of `make run`) add to a run of `make test` on
# PostgreSQL and Redis (the set-up of production, as CI runs it): every test that reaches the
# database or starts a worker, on SQLite. The browser tests read the same pages through the same
# views, a test that reaches no database (all of tests/inference, and the pure functions
# elsewhere: --database-tests-only, tests/conftest.py) gives the same answer on both, and a test
# marked postgres needs PostgreSQL or checks production's servers (gunicorn behind nginx).
test-sqlite: install
	env -u DATABASE_URL -u CELERY_BROKER_URL $(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile -m "not e2e and not postgres" \
	  --database-tests-only --ignore=tests/inference

# The quick loop while working: no browser, no worker process, SQLite and the filesystem broker
# whatever the environment says (PostgreSQL-only tests are then skipped).
test-fast: install
	env -u DATABASE_URL -u CELERY_BROKER_URL $(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile -m "not e2e and not worker"

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	$(PY) bench/import_bench.py
	$(PY) bench/annotation_bench.py
	$(PY) bench/keystroke_bench.py
	$(PY) bench/judge_bench.py
	$(PY) bench/coverage_bench.py
	$(PY) bench/coverage_grid.py --quick
	$(PY) bench/efficiency_bench.py --quick
	$(PY) bench/stability_bench.py
	$(PY) bench/compare_bench.py
	$(PY) bench/confidence_sample_bench.py --reps 50
	$(PY) bench/anytime_stop_bench.py
	$(PY) bench/report_bench.py
	$(PY) bench/interchange_bench.py
	$(PY) bench/evidence_bench.py

# docs/screenshots/: the annotation page, a report, the annotators' page and two judge runs (refused, failed), French and English, 1440 and 390 px, from
# the demo in a throw-away database (tests never write there).
screenshots: install browser
	$(PY) bench/screenshots.py

# The French catalogue (locale/fr): new strings extracted, then compiled (needs GNU gettext).
messages: install
	$(PY) manage.py makemessages --locale fr --ignore ".venv/*" --ignore "var/*"
	$(PY) manage.py compilemessages --locale fr --ignore ".venv/*"

clean:
	rm -rf var/celery var/test-*.sqlite3
