# Sourced by the Python stages (.ci/python.sh and the trainer stages .ci/trl.sh, .ci/tinker.sh,
# .ci/verifiers.sh, .ci/verl.sh): the one way a stage makes its venv.
. .ci/wheel.sh
. .ci/no-skips.sh

# pip's wheel cache would keep a second copy of every download (torch's CUDA wheels: about 3 GB),
# and the venvs under ~/.cache are what is kept between runs.
export PIP_NO_CACHE_DIR=1

# shared_torch VENV REQUIREMENTS: when REQUIREMENTS pins torch (the trl, tinker and verl stages
# all pin the same one), installs that torch with its dependencies (its CUDA wheels: about 5 GB)
# once into ~/.cache/dealgym/torch-VERSION-pyX.Y (its wheels are built for one Python), and adds
# that folder to VENV's path with a .pth file:
# pip then finds the pin already satisfied, and the three trainer venvs share one copy instead of
# holding three (a CI machine ran out of disk installing the second). A pin another package
# needs at another version is installed into the venv itself, ahead of the shared folder.
shared_torch() {
  local venv="$1" requirements="$2" version python dir site
  version=$(sed -n 's/^torch==\([^ ;#]*\).*/\1/p' "$requirements")
  [ -n "$version" ] || return 0
  python=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  dir="${HOME}/.cache/dealgym/torch-${version}-py${python}"
  if [ ! -d "$dir" ]; then
    rm -rf "$dir.partial"
    "$venv/bin/pip" --disable-pip-version-check install -q --target "$dir.partial" "torch==$version"
    mv "$dir.partial" "$dir"
  fi
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$dir" > "$site/dealgym-shared-torch.pth"
}

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
  # A venv made before torch was shared holds its own copy (about 5 GB): make it again.
  if compgen -G "$venv/lib/python3*/site-packages/torch" >/dev/null; then
    rm -rf "$venv"
  fi
  python3 -m venv "$venv"
  pip="$venv/bin/pip --disable-pip-version-check"
  shared_torch "$venv" "$requirements"
  $pip install -q -r "$requirements"
  if [ "$tokenizer" = tokenizer ]; then
    $pip install -q --no-deps anthropic==0.34.2
  fi
  $pip install -q --force-reinstall --no-deps "$(dealgym_wheel "$pip")"
  cargo build --locked -q
  export DEALGYM_BIN="$PWD/target/debug/dealgym"
}
