# Sourced by the Python stages (.ci/python.sh, .ci/tinker.sh, ...): the package's wheel, built
# from this checkout by pip (the README's `pip install .`: maturin, release) once per CI run.
# .ci/run names a fresh folder in DEALGYM_WHEELS, so the first stage builds the wheel there and
# the later ones install the same file instead of compiling the extension again; a stage run on
# its own builds into a temporary folder of its own.
#
# dealgym_wheel PIP: prints the wheel's path, building it first when the folder has none.
dealgym_wheel() {
  local pip="$1" dir="${DEALGYM_WHEELS:-}"
  if [ -z "$dir" ]; then
    dir=$(mktemp -d)
  fi
  mkdir -p "$dir"
  if ! ls "$dir"/dealgym-*.whl >/dev/null 2>&1; then
    $pip wheel -q --no-deps -w "$dir" . >&2
  fi
  ls "$dir"/dealgym-*.whl
}
