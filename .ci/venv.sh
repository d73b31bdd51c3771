# Sourced by the Python stages (.ci/python.sh and the trainer stages .ci/trl.sh, .ci/tinker.sh,
# .ci/verifiers.sh, .ci/verl.sh): the one way a stage makes its venv.
. .ci/wheel.sh
. .ci/no-skips.sh

# stage_venv LABEL NAME REQUIREMENTS [tokenizer]: prints one "SKIPPED: LABEL" line and ends the
# stage (exit 0) when PyPI cannot be reached; once it can, every failure is a failure. Else makes
# (or reuses) the venv ~/.cache/dealgym/NAME-venv with REQUIREMENTS, and with `tokenizer` the
# anthropic wheel, whose tokenizer.json (a real 65,000-token BPE) the token-exact tests read
# (nothing of the package is imported, so none of its dependencies are installed); installs the
# package's wheel, built from this checkout once per CI run (.ci/wheel.sh: the README's `pip
# install .`); builds the CLI the tests run. Sets `venv`, `pip` and exports DEALGYM_BIN.
stage_venv() {
  local label="$1" name="$2" requirements="$3" tokenizer="${4:-}"
  if ! python3 -c "import urllib.request; urllib.request.urlopen('https://pypi.org/simple/pip/', timeout=15)" 2>/dev/null; then
    echo "SKIPPED: $label: PyPI (https://pypi.org) cannot be reached from this machine"
    exit 0
  fi
  venv="${HOME}/.cache/dealgym/${name}-venv"
  python3 -m venv "$venv"
  pip="$venv/bin/pip --disable-pip-version-check"
  $pip install -q -r "$requirements"
  if [ "$tokenizer" = tokenizer ]; then
    $pip install -q --no-deps anthropic==0.34.2
  fi
  $pip install -q --force-reinstall --no-deps "$(dealgym_wheel "$pip")"
  cargo build --locked -q
  export DEALGYM_BIN="$PWD/target/debug/dealgym"
}
