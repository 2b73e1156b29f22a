#!/usr/bin/env bash
# Install everything the tests need (system packages, a venv with the test extras) and run
# the linter and the whole test suite. Safe to run again; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"

have_postgres() {
  command -v pg_ctl >/dev/null 2>&1 || compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null
}
missing=()
have_postgres || missing+=(postgresql)
# Browser tests drive Debian's Chromium (never a downloaded browser build).
[ -x /usr/bin/chromium ] || missing+=(chromium chromium-driver)
# The sign-in tests run a real OpenID Connect provider (tests/oidc) on Node.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# The real-model tests compile llama-cpp-python's server (an sdist) once.
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing system packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "Missing system packages: ${missing[*]} (install them, e.g. with apt-get, then re-run)" >&2
    exit 1
  fi
fi

# The real packages we are compared with (rubric, autorubric, verifiers, OpenEnv) each get a
# venv of their own, built once from the registry (tests/compat/venvs.py): start them now, beside
# the app's install, so the tests that need them do not wait for pip.
mkdir -p test-artifacts
nice -n 10 "$PYTHON" tests/compat/venvs.py >test-artifacts/compat-venvs.log 2>&1 &

# A new venv, or the one a killed run left half made (no pip yet): made whole again.
if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'

.venv/bin/ruff check .
# The real-model tests need llama-cpp-python's server, compiled once (~14 min on two cores) into
# a cached venv: start that build now, beside the other tests; the tests wait for it.
# Niced to the lowest priority: the tests come first (the timing-sensitive ones above all);
# the build takes what CPU they leave and has the whole non-browser and browser run to finish.
nice -n 19 .venv/bin/python -m tests.real_model.server >test-artifacts/real-model-build.log 2>&1 &
# The documentation, strictly: a broken link or anchor, a missing page or one left out of the
# navigation fails the build. The site goes to a temporary directory, never into the checkout.
docs_site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$docs_site"
rm -rf "$docs_site"
# Browser tests run in their own pytest process: pytest-playwright's sync API leaves an event
# loop behind that breaks async tests collected after it.
# The files that measure time, speed or processes racing each other (tests/conftest.py) run
# one test at a time in a pytest process of their own, beside the rest on three workers
# (pytest-xdist): they wait on providers and helper processes half the time, and the rest
# fill the cores meanwhile. Three workers on two cores: the rest wait too (servers started,
# subprocesses, PostgreSQL), and with two the machine sat partly idle (CI took 48-55 min
# with the rest's part at 35-41 min). The rest run at a lower priority (nice), so a timing
# test still gets a core as soon as it asks for one. Its output follows the rest's.
# --durations: the slowest tests are named in every run, to keep CI's time in view; every test's
# time is in test-artifacts/junit-*.xml (python scripts/test_times.py sums them per file).
.venv/bin/python -m pytest -m "not e2e and not real_model" --one-at-a-time=only \
  --durations=10 --junitxml=test-artifacts/junit-one-at-a-time.xml "$@" \
  >test-artifacts/one-at-a-time.log 2>&1 &
timing=$!
rest=0
nice -n 5 .venv/bin/python -m pytest -m "not e2e and not real_model" --one-at-a-time=without \
  -n 3 --durations=20 --junitxml=test-artifacts/junit-unit.xml "$@" || rest=$?
timed=0
wait "$timing" || timed=$?
echo "== the timing files, one test at a time (beside the run above) =="
cat test-artifacts/one-at-a-time.log
# 5 is "no test selected": arguments that name files of one part only
for status in "$rest" "$timed"; do
  if [ "$status" != 0 ] && [ "$status" != 5 ]; then exit "$status"; fi
done
if [ "$rest" = 5 ] && [ "$timed" = 5 ]; then exit 5; fi
# Two workers here too: a browser test mostly waits for the page (17 min one at a time, ~11 on
# two workers); every journey starts its own app server on a free port with its own database.
# A file's tests go to one worker, in order (--dist loadfile): they share the file's app
# server and database, and some start from what the one before saved (split across workers,
# each worker started its own server and the second test found nothing saved).
.venv/bin/python -m pytest -m e2e tests/e2e -n 2 --dist loadfile --durations=15 \
  --junitxml=test-artifacts/junit-e2e.xml "$@"
# Last, when the background build above has long finished: the real small model.
.venv/bin/python -m pytest -m real_model tests/real_model "$@"
