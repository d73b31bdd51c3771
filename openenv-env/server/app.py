"""OpenEnv's entry point for dealgym: start `dealgym serve` on the port OpenEnv asks for.

The server is the `dealgym` binary, not a Python app: this module only finds it ($DEALGYM_BIN,
else `dealgym` on PATH) and replaces the Python process with it, so signals (SIGTERM, Ctrl-C)
reach the server itself and it shuts down gracefully. Arguments after the known ones are passed
to `dealgym serve` unchanged (`--opponent rule:boulware`, `--log runs/serve.jsonl`, …).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Optional, Sequence


def binary() -> str:
    """The dealgym binary: $DEALGYM_BIN, else `dealgym` on PATH."""
    named = os.environ.get("DEALGYM_BIN")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            sys.exit(f"DEALGYM_BIN={named} is not an executable file")
        return named
    found = shutil.which("dealgym")
    if found is None:
        sys.exit(
            "no `dealgym` on PATH: build it (`cargo build --release` in the dealgym repository) "
            "and put target/release on PATH, or set DEALGYM_BIN to the binary"
        )
    return found


def command(port: int, host: str, extra: Sequence[str]) -> list[str]:
    """The `dealgym serve` command line."""
    return [binary(), "serve", "--host", host, "--port", str(port), *extra]


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Parse `--port`/`--host` and exec `dealgym serve` with the rest of the arguments."""
    parser = argparse.ArgumentParser(
        description="Serve dealgym over OpenEnv's protocol (execs `dealgym serve`)."
    )
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--host", default="127.0.0.1")
    args, extra = parser.parse_known_args(argv)
    cmd = command(args.port, args.host, extra)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
