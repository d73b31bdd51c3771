"""The ``dealgym`` command that ``pip install .`` puts on the path: the same Rust command line as
the ``dealgym`` binary (``dealgym._core.main``), run in this process."""

from __future__ import annotations

import signal
import sys

from dealgym import _core


def main() -> None:
    """Run the command line on ``sys.argv`` and exit with its status."""
    # Python turns Ctrl-C into a flag its own code checks, which code running in Rust never
    # does: with the default action back, Ctrl-C stops the command as it stops the binary (a
    # run installs its own handlers, for its grace period, over this one).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(_core.main(sys.argv))
