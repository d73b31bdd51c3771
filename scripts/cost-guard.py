#!/usr/bin/env python3
"""The engine-cost regression guard (CI): dealgym's CPU per turn against a reference measured
in the same run on the same machine, so a change that doubles the engine's cost is seen
whatever the machine's speed, with no timing threshold in a test.

The reference is the bare asyncio peer (benches/peers/asyncio_harness.py: standard-library
Python, one keep-alive connection per call slot, dealgym's own requests, no game, no records)
making the same number of calls against the same mock. Each round runs one throughput cell
(examples/throughput.rs `--cell`: both seats of every family on the mock over HTTP, the
process's own CPU over the run) and then the peer, alternately; the medians of the rounds give

    ratio = dealgym's CPU µs per turn / the peer's CPU µs per call

and the guard fails when the ratio is more than LIMIT (1.5) times the one written in
benches/cost-guard.json (measured when the engine's cost last changed on purpose; rewrite it
with --update). It needs the release build of the example:

    cargo build --release --locked --example throughput
    python3 scripts/cost-guard.py [--rounds 3] [--update]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "target", "release", "examples", "throughput")
PEER = os.path.join(ROOT, "benches", "peers", "asyncio_harness.py")
REFERENCE = os.path.join(ROOT, "benches", "cost-guard.json")
# Twice the reference is what the guard is for; 1.5 leaves room for the noise of a shared
# machine (±10-20 % between runs) and still fails a change that doubles the engine's cost.
LIMIT = 1.5


# No step of a round takes more than seconds; one that hangs fails the guard instead of CI.
STEP_TIMEOUT_S = 300


def step(what, command):
    """Run one step; on failure or a hang, say which and show what it printed."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                              timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"cost guard: {what} ran past {STEP_TIMEOUT_S} s")
    if done.returncode != 0:
        raise SystemExit(f"cost guard: {what} failed (exit {done.returncode}):\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def cell(example, url, concurrency, limit, group, out):
    """One throughput cell: dealgym's CPU µs per model call and the calls it made."""
    if os.path.exists(out):
        os.remove(out)
    stdout = step("the throughput cell", [
        example, "--cell", "--mock", url, "--concurrency", str(concurrency),
        "--limit", str(limit), "--group", str(group), "--out", out])
    report = json.loads(stdout.strip().splitlines()[-1])
    if report["errors"]:
        raise SystemExit(f"cost guard: the cell ended {report['errors']} episodes in errors")
    return report["cpu_us"] / report["calls"], report["calls"]


def peer(port, concurrency, calls, prompts):
    """The peer's CPU µs per call for `calls` calls of dealgym's own requests."""
    stdout = step("the asyncio peer", [
        sys.executable, PEER, "--port", str(port), "--concurrency", str(concurrency),
        "--calls", str(calls), "--prompt-from", prompts])
    found = re.search(r"client CPU ([0-9.]+) µs/call", stdout)
    if not found:
        raise SystemExit(f"cost guard: the peer said nothing readable: {stdout!r}")
    return float(found.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--limit", type=int, default=60, help="scenarios of each family")
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--update", action="store_true", help="write the measured ratio as the reference")
    parser.add_argument("--example", default=EXAMPLE,
                        help="the throughput example to measure (another build, to compare)")
    args = parser.parse_args()
    example = args.example
    if not os.access(example, os.X_OK):
        raise SystemExit(f"cost guard: {example} is missing: cargo build --release --locked --example throughput")
    mock = subprocess.Popen([example, "--mock-child", "--latency-ms", "0"],
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = mock.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:([0-9]+)/v1", line)
        if not found:
            raise SystemExit(f"cost guard: the mock did not start: {line!r}")
        url, port = found.group(0), int(found.group(1))
        engine, reference = [], []
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cell.jsonl")
            for r in range(args.rounds):
                per_turn, calls = cell(example, url, args.concurrency, args.limit, args.group, out)
                per_call = peer(port, args.concurrency, calls, out)
                engine.append(per_turn)
                reference.append(per_call)
                print(f"cost guard: round {r + 1}: dealgym {per_turn:.1f} µs/turn, "
                      f"peer {per_call:.1f} µs/call ({calls} calls each, {args.concurrency} in flight)",
                      flush=True)
    finally:
        mock.kill()
        mock.wait()
    e, p = statistics.median(engine), statistics.median(reference)
    ratio = e / p
    if args.update:
        with open(REFERENCE, "w") as f:
            json.dump({"ratio": round(ratio, 3), "dealgym_us_per_turn": round(e, 1),
                       "peer_us_per_call": round(p, 1),
                       "command": "python3 scripts/cost-guard.py --update"}, f, indent=2)
            f.write("\n")
        print(f"cost guard: reference written: ratio {ratio:.2f}")
        return
    with open(REFERENCE) as f:
        expected = json.load(f)["ratio"]
    verdict = "ok" if ratio <= LIMIT * expected else "FAILED"
    print(f"cost guard: {verdict}: dealgym {e:.1f} µs/turn, peer {p:.1f} µs/call: ratio {ratio:.2f} "
          f"(reference {expected:.2f}, at most {LIMIT * expected:.2f})")
    if verdict != "ok":
        raise SystemExit(1)


if __name__ == "__main__":
    main()
