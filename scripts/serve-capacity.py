#!/usr/bin/env python3
"""How many concurrent sessions `dealgym serve` holds, in OpenEnv's published format.

OpenEnv's tutorial (meta-pytorch/OpenEnv, tutorial/03-scaling.md, "Experiments Results",
measured with burtenshaw/openenv-scaling's tests/test_scaling.py) starts N WebSocket sessions at
once per batch; each connects, resets and steps once (the step sleeps `wait` seconds on the
server), then closes. Per batch it reports the success rate, the P99 of a session's total time
and requests/s (successful sessions over the batch's wall time); the capacity ("max batch") is
the largest N with >= 95 % success in every repetition.

Here the same, against `dealgym serve` on loopback, with a real step: each session resets a
Craigslist episode against `rule:boulware` and plays up to --steps steps, each a valid
completion sent after --think seconds (a model writing its turn); the server plays it and the
rule's answer, and writes the record when the episode ends. The client is Python asyncio with
`websockets`, as OpenEnv's is. The server's session and connection limits are raised above the
largest batch so that the machine, not a setting, is the bound.

    cargo build --release --locked
    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install websockets
    /tmp/venv/bin/python scripts/serve-capacity.py [--bin target/release/dealgym] \
        [--grid 32,128,512,2048] [--think 1.0] [--steps 3] [--reps 3] [--timeout 60]
"""

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import websockets


def answer(prompt: str) -> str:
    """A fixed valid turn: accept a standing offer, otherwise ask for one."""
    if "[SUBMIT_DEAL]" in prompt:
        return "Thought: good enough.\nTalk: Deal.\nAction: [ACCEPT_DEAL]"
    return "Thought: wait for an offer.\nTalk: What can you offer me?\nAction: [REJECT_DEAL]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary: str, most: int, log: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    limit = str(2 * most + 64)
    server = subprocess.Popen(
        [binary, "serve", "--port", str(port), "--log", log,
         "--max-sessions", limit, "--max-connections", limit],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            if time.time() > deadline or server.poll() is not None:
                sys.exit(f"{binary} serve did not listen on {port}")
            time.sleep(0.05)


async def ask(ws, message: dict) -> dict:
    await ws.send(json.dumps(message))
    reply = json.loads(await ws.recv())
    if reply.get("type") == "error":
        raise RuntimeError(str(reply))
    return reply


async def session(url: str, n: int, think: float, steps: int) -> None:
    async with websockets.connect(url, open_timeout=None, max_size=None) as ws:
        reply = await ask(ws, {"type": "reset", "data": {
            "family": "craigslist", "seed": n, "opponent": "rule:boulware"}})
        for _ in range(steps):
            if reply["data"].get("done"):
                break
            message = answer(reply["data"]["observation"]["prompt"])
            await asyncio.sleep(think)
            reply = await ask(ws, {"type": "step", "data": {"message": message}})
        await ws.send(json.dumps({"type": "close"}))


async def timed(url: str, n: int, args) -> float | None:
    start = time.perf_counter()
    try:
        await asyncio.wait_for(session(url, n, args.think, args.steps), args.timeout)
    except Exception:  # a failed session: refused, closed, timed out or an error reply
        return None
    return time.perf_counter() - start


def percentile(data: list[float], p: float) -> float:
    """test_scaling.py's: linear interpolation between the closest ranks."""
    if not data:
        return float("nan")
    data = sorted(data)
    k = (len(data) - 1) * p / 100
    f = int(k)
    c = min(f + 1, len(data) - 1)
    return data[f] + (k - f) * (data[c] - data[f])


async def batch(url: str, n: int, args) -> tuple[int, list[float], float]:
    start = time.perf_counter()
    times = await asyncio.gather(*(timed(url, i, args) for i in range(n)))
    wall = time.perf_counter() - start
    ok = [t for t in times if t is not None]
    return len(ok), ok, wall


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default="target/release/dealgym")
    p.add_argument("--grid", default="32,128,512,2048")
    p.add_argument("--think", type=float, default=1.0)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args()
    grid = [int(n) for n in args.grid.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        server, port = start_server(args.bin, max(grid), os.path.join(tmp, "serve.jsonl"))
        url = f"ws://127.0.0.1:{port}/ws"
        try:
            print(f"dealgym serve capacity: think {args.think} s, up to {args.steps} steps, "
                  f"{args.reps} reps, timeout {args.timeout} s, {os.cpu_count()} cores")
            print("| sessions | success (worst rep) | P99 latency | requests/s |")
            print("|---:|---:|---:|---:|")
            capacity = None
            for n in grid:
                worst, p99s, rps = 1.0, [], []
                for _ in range(args.reps):
                    ok, times, wall = await batch(url, n, args)
                    worst = min(worst, ok / n)
                    p99s.append(percentile(times, 99))
                    rps.append(ok / wall)
                    await asyncio.sleep(1)
                print(f"| {n} | {100 * worst:.1f} % | {sum(p99s) / len(p99s):.2f} s "
                      f"| {sum(rps) / len(rps):.0f} |", flush=True)
                if worst >= 0.95:
                    capacity = n
            print(f"capacity (largest batch at >= 95 % success in every rep): {capacity}")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    asyncio.run(main())
