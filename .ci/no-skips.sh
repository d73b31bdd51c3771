# Sourced by the trainer stages (.ci/trl.sh, .ci/tinker.sh, .ci/verifiers.sh, .ci/verl.sh): their
# tests skip where the trainer cannot be imported, which is right in the package's own venv and
# wrong in the stage's, where it was just installed. A stage whose tests skipped has tested
# nothing of its trainer, so it fails.
#
# pytest_none_skipped PYTHON ARGS...: runs `PYTHON -m pytest ARGS...` and fails on any skip.
pytest_none_skipped() {
  local python="$1" log
  shift
  log=$(mktemp)
  "$python" -m pytest -q -p no:cacheprovider -rs "$@" 2>&1 | tee "$log"
  if grep -qE "[0-9]+ skipped" "$log"; then
    rm -f "$log"
    echo "a test was skipped where its trainer is installed (see the SKIPPED lines above)" >&2
    return 1
  fi
  rm -f "$log"
}
