#!/usr/bin/env bash
# The Python examples (examples/python/) against a live `dealgym serve` backed by the mock:
# the stdlib REST learner, OpenEnv's GenericEnvClient and MCP's own client (`mcp`, which lists
# the tools and negotiates to a deal through them) from PyPI. (TRL runs in process, in
# .ci/trl.sh.) Then OpenEnv's own validator judges the running server (`openenv validate --url`:
# /openapi.json, /health, /metadata, /schema, /mcp, the mode's routes) and the environment
# directory openenv-env/; either failing a criterion fails the script. Prints one SKIPPED line
# (and succeeds) only when PyPI cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked -q
bin=target/debug/dealgym
venv="${HOME}/.cache/dealgym/serve-venv"
python3 -m venv "$venv"
if ! "$venv/bin/pip" install -q --disable-pip-version-check openenv-core==0.3.0 mcp==2.3.0 >/tmp/dealgym-pip.log 2>&1; then
  if grep -qiE "connection|resolve|network|timed out|no matching distribution" /tmp/dealgym-pip.log; then
    echo "SKIPPED: serve-python: PyPI cannot be reached ($(tail -1 /tmp/dealgym-pip.log))"
    exit 0
  fi
  cat /tmp/dealgym-pip.log >&2
  exit 1
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mock_port=$(free_port); serve_port=$(free_port)
work=$(mktemp -d)
"$bin" mock --port "$mock_port" >"$work/mock.log" 2>&1 & mock_pid=$!
"$bin" serve --port "$serve_port" --log "$work/serve.jsonl" --opponent rule:linear --allow-endpoint "http://127.0.0.1:$mock_port" >"$work/serve.log" 2>&1 & serve_pid=$!
trap 'kill $mock_pid $serve_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$serve_port/health" >/dev/null 2>&1 && break
  sleep 0.2
done
server="http://127.0.0.1:$serve_port"; endpoint="http://127.0.0.1:$mock_port/v1"
cd examples/python
python3 rest_learner.py --server "$server" --endpoint "$endpoint" --episodes 3
"$venv/bin/python" openenv_learner.py --server "$server" --endpoint "$endpoint" --episodes 5
# MCP's own client lists the tools and negotiates to a deal through them (exits 1 otherwise).
"$venv/bin/python" mcp_learner.py --server "$server" --episodes 3
cd ../..
# The validator exits non-zero on any failed criterion; its JSON report is printed either way.
"$venv/bin/openenv" validate --url "$server"
"$venv/bin/openenv" validate openenv-env/
kill -TERM "$serve_pid"; wait "$serve_pid" || true
"$bin" replay "$work/serve.jsonl" --verify
