# Sourced by the browser stages (report-browser.sh, play-browser.sh): Debian's chromium at
# $CHROMIUM, installed with apt-get when it is missing, and `check NAME CONDITION` (prints
# ok:/FAIL: and sets failed=1 on a failure). A stage defines `skip` first (it prints one
# "SKIPPED: <stage>: <why>" line and exits 0); what cannot be installed is skipped, never passed
# silently.
failed=0
check() {
  if eval "$2"; then
    echo "ok: $1"
  else
    echo "FAIL: $1"
    failed=1
  fi
}

CHROMIUM=/usr/bin/chromium
if [ ! -x "$CHROMIUM" ]; then
  SUDO=
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || skip "chromium is missing and installing it needs root (no sudo)"
    SUDO="sudo -n"
  fi
  log=$(mktemp)
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } >"$log" 2>&1; then
    why=$(tail -n 1 "$log" | tr -d '\r')
    rm -f "$log"
    skip "apt-get could not install chromium (${why:-no output})"
  fi
  rm -f "$log"
  [ -x "$CHROMIUM" ] || skip "apt-get installed chromium but $CHROMIUM is missing"
fi
