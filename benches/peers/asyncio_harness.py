#!/usr/bin/env python3
"""A bare Python asyncio client against the same mock endpoint dealgym's throughput bench uses:
the peer that shows what a plain asyncio loop gets from the same server at the same concurrency.

Standard library only (asyncio streams, raw HTTP/1.1 with keep-alive, one connection per
in-flight call slot), so it needs no install. It makes CALLS chat-completions calls with
CONCURRENCY in flight and prints calls/s, the client's own CPU per call (time.process_time:
this process only, not the server) and p50/p99 call latency.

Each request is one of dealgym's own learner requests, rebuilt from a record file given with
--prompt-from (the output of a `dealgym run`: system prompt, the learner's replies, the
opponent's forwarded turns), so the mock does the same work per call as for dealgym; without
it, a short built-in prompt is sent.

    target/release/dealgym mock --port 18080 --latency-ms 200 &
    python3 benches/peers/asyncio_harness.py --port 18080 --concurrency 1024 --calls 40000

There is no game here: no parsing of turns, no episode state, no records. It is the floor
of what any asyncio-based engine pays per call.
"""

import argparse
import asyncio
import json
import resource
import time


def build_bodies(prompt_from):
    """One request body per learner call of the records in `prompt_from` (the conversation as
    dealgym sent it: the system prompt, then the learner's own replies and the opponent's
    forwarded turns), so the mock does the same work per call as for dealgym."""
    base = {"model": "mock", "temperature": 0.7, "max_tokens": 256}
    if not prompt_from:
        messages = [
            {"role": "system", "content": "You are a buyer negotiating the price of a lamp."},
            {"role": "user", "content": "The seller opens. Your move."},
        ]
        return [dict(base, messages=messages)]
    bodies = []
    with open(prompt_from) as f:
        for line in f:
            record = json.loads(line)
            messages = [{"role": "system", "content": record["seats"]["learner"]["system_prompt"]}]
            if record["first_mover"] == "learner":
                messages.append({"role": "user", "content": "You open. Your move."})
                bodies.append(dict(base, messages=list(messages)))
            for turn in record["turns"]:
                if turn["seat"] == "learner":
                    messages.append({"role": "assistant", "content": turn["raw"]})
                else:
                    messages.append({"role": "user", "content": turn.get("forwarded") or ""})
                    bodies.append(dict(base, messages=list(messages)))
    return bodies


async def worker(host, port, bodies, counter, total, latencies):
    reader, writer = await asyncio.open_connection(host, port)
    while True:
        if counter[0] >= total:
            break
        counter[0] += 1
        n = counter[0]
        # A different seed per call, as dealgym sends per-episode seeds.
        body = json.dumps(dict(bodies[n % len(bodies)], seed=n)).encode()
        request = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        started = time.perf_counter()
        writer.write(request + body)
        status = await reader.readline()
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await reader.readexactly(length)
        latencies.append(time.perf_counter() - started)
        if b" 200 " not in status:
            raise RuntimeError(f"HTTP {status!r}")
        reply = json.loads(payload)
        reply["choices"][0]["message"]["content"]
    writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--calls", type=int, default=10000)
    parser.add_argument(
        "--prompt-from", help="a dealgym record file: its learner conversations are replayed"
    )
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    bodies = build_bodies(args.prompt_from)
    counter, latencies = [0], []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.gather(
        *(
            worker(args.host, args.port, bodies, counter, args.calls, latencies)
            for _ in range(args.concurrency)
        )
    )
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    latencies.sort()
    n = len(latencies)
    p = lambda q: latencies[min(n - 1, round((n - 1) * q))] * 1000
    print(
        f"asyncio peer: {n} calls, {args.concurrency} in flight, {wall:.1f} s: "
        f"{n / wall:.0f} calls/s, client CPU {1e6 * cpu / n:.1f} µs/call, "
        f"p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main())
