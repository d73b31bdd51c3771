"""Steps per second of dealgym in Python, beside the Rust engine, `dealgym serve` and TextArena
(issue 22's benchmark; the figures and how to read them are in BENCHMARKS.md, "Python in
process"). A benchmark, not a test: run it by hand from the repository root, in a venv that
holds the release build of the package and the comparison's own packages:

    python3 -m venv ~/.cache/dealgym/bench-venv && . ~/.cache/dealgym/bench-venv/bin/activate
    pip install -r crates/python/bench/requirements.txt
    maturin develop --release && cargo build --release --locked
    python crates/python/bench/steps.py [--families casino,craigslist] [--episodes 1000] [--runs 5]

The completions are written once, untimed, by the built-in negotiators on both seats (`dealgym
run` with a rule player for the learner and one for the opponent, several pairings), and read
from the records' turns; each episode is replayed into a `Game` and checked against its record
(the same outcome and rewards) before anything is timed. Then the same episodes are stepped:

- ``aec``: `DealAECEnv`, one episode at a time: `reset(options=...)`, `step(text)` per completion,
  then the two dead steps PettingZoo asks for;
- ``aec+last``: the same through PettingZoo's loop, `agent_iter()` with `last()` (which observes:
  the chat and the structured state) before every step;
- ``batch``: `_core.step_many` over `--batch` games, each reset (a new `Game`) to its next episode
  when it ends;
- ``rust``: `_core._bench_replay`, the engine stepping the same completions through the same
  `Game`s with no Python in the loop; its clock starts once the games are built (by `Game`'s
  constructor), and the call's whole time, the building included, is the row's loop time;
- ``serve``: `dealgym serve` over one WebSocket, both seats external (`opponent: "external"`),
  a reset per episode and a step per completion, each answer read and decoded;
- ``textarena`` and ``textarena+obs``: TextArena's `SimpleNegotiation-v0-raw`, `step` alone and
  with `get_observation()` before each, over about as many steps (episodes of fixed actions);
  ``textarena-v0+obs``: `SimpleNegotiation-v0` (its observation and action wrappers), made anew
  per episode since its observation wrapper keeps every earlier episode's messages.

Each way is measured `--runs` times, the ways taking turns, and the median is reported. A cell
gives steps/s over the whole loop, resets (a new `Game`, an env reset, a WebSocket reset) included,
and in brackets with the resets' time taken out.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from dealgym import _core
from dealgym.pettingzoo import DealAECEnv

REPO = pathlib.Path(__file__).resolve().parents[3]
FAMILIES = ("casino", "craigslist", "dnd", "job_interview", "ahp")
#: (learner, opponent) rule players: each pairing plays every scenario once.
PAIRINGS = (
    ("boulware", "linear"),
    ("conceder", "tough"),
    ("linear", "conceder"),
    ("tough", "boulware"),
)
#: The ways of stepping, in the table's order (the module's docstring says what each is).
WAYS = (
    "aec", "aec+last", "batch", "rust", "serve", "textarena", "textarena+obs", "textarena-v0+obs",
)
#: TextArena's own actions for SimpleNegotiation: offers, an accept, a deny.
TEXTARENA_ACTIONS = (
    "I have wheat to spare. [Offer: 2 Wheat -> 1 Sheep]",
    "That works for me. [Accept]",
    "How about this instead? [Offer: 1 Wood -> 1 Wheat]",
    "Not this time. [Deny]",
)


@dataclass
class Episode:
    kwargs: dict  # Game's keyword arguments, `family` among them
    texts: list[str]  # the completions, in turn order, both seats
    outcome: str
    rewards: dict[str, float]

    @property
    def options(self) -> dict:
        return {k: v for k, v in self.kwargs.items() if k != "family"}


def generate(binary: str, family: str, count: int, workdir: pathlib.Path) -> list[Episode]:
    """`count` episodes of `family` played by rule players on both seats (untimed)."""
    n_scenarios = len(_core.scenario_ids(family))
    per_pairing = min(n_scenarios, -(-count // len(PAIRINGS)))
    episodes = []
    for learner, opponent in PAIRINGS:
        out = workdir / f"{family}-{learner}-{opponent}.jsonl"
        subprocess.run(
            [binary, "run", "--learner", f"rule:{learner}", "--opponent", f"rule:{opponent}",
             "--scenarios", f"scenarios/{family}.jsonl", "--limit", str(per_pairing),
             "--out", str(out), "--quiet", "--seed", "0"],
            cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for line in out.read_text().splitlines():
            record = json.loads(line)
            seats = record["setup"]["seats"]
            episodes.append(
                Episode(
                    kwargs={
                        "family": family,
                        "scenario_id": record["scenario_id"],
                        "learner_role": seats["learner"]["role"],
                        # The record names the seat; a Game takes the role in it.
                        "first_mover": seats[record["setup"]["first_mover"]]["role"],
                    },
                    texts=[turn["raw"] for turn in record["turns"]],
                    outcome=record["outcome"]["kind"],
                    rewards={seats[s]["role"]: r for s, r in record["rewards"].items()},
                )
            )
    # A family with fewer scenarios than asked (job_interview has 109) plays them again.
    return (episodes * -(-count // len(episodes)))[:count]


def check(episodes: list[Episode]) -> None:
    """Every episode replayed in a Game ends as its record did, on its last completion."""
    for i, ep in enumerate(episodes):
        game = _core.Game(**ep.kwargs)
        for text in ep.texts:
            info = game.step(text)
        if not (info.done and game.outcome["kind"] == ep.outcome and game.rewards == ep.rewards):
            sys.exit(f"episode {i} ({ep.kwargs}) does not replay as its record ended")


# --- the ways of stepping: each answers (steps, seconds, seconds of them spent in resets) ---


def aec_step(episodes: list[Episode]) -> tuple[int, float, float]:
    env = DealAECEnv(episodes[0].kwargs["family"])
    steps, resets = 0, 0.0
    clock = time.perf_counter
    start = clock()
    for ep in episodes:
        t = clock()
        env.reset(seed=0, options=ep.options)
        resets += clock() - t
        for text in ep.texts:
            env.step(text)
        while env.agents:  # PettingZoo's dead steps
            env.step(None)
        steps += len(ep.texts)
    return steps, clock() - start, resets


def aec_last(episodes: list[Episode]) -> tuple[int, float, float]:
    env = DealAECEnv(episodes[0].kwargs["family"])
    steps, resets = 0, 0.0
    clock = time.perf_counter
    start = clock()
    for ep in episodes:
        t = clock()
        env.reset(seed=0, options=ep.options)
        resets += clock() - t
        texts = iter(ep.texts)
        for _agent in env.agent_iter():
            _obs, _reward, terminated, truncated, _info = env.last()
            env.step(None if terminated or truncated else next(texts))
        steps += len(ep.texts)
    return steps, clock() - start, resets


def batch(episodes: list[Episode], size: int) -> tuple[int, float, float]:
    """`size` games stepped together by `step_many`; a game that ends takes its next episode
    (game i plays episodes i, i + size, …) until its share runs out."""
    Game, step_many = _core.Game, _core.step_many
    queues = [iter(episodes[i::size]) for i in range(size)]
    steps, resets = 0, 0.0
    clock = time.perf_counter
    start = clock()
    games, texts, at, owner = [], [], [], []
    for q, queue in enumerate(queues):
        ep = next(queue, None)
        if ep is not None:
            t = clock()
            games.append(Game(**ep.kwargs))
            resets += clock() - t
            texts.append(ep.texts)
            at.append(0)
            owner.append(q)
    while games:
        infos = step_many(games, [tx[i] for tx, i in zip(texts, at)])
        steps += len(games)
        ended = False
        for k, info in enumerate(infos):
            at[k] += 1
            if info.done:
                ended = True
                ep = next(queues[owner[k]], None)
                if ep is None:
                    games[k] = None
                else:
                    t = clock()
                    games[k] = Game(**ep.kwargs)
                    resets += clock() - t
                    texts[k] = ep.texts
                    at[k] = 0
        if ended:
            live = [k for k, g in enumerate(games) if g is not None]
            games = [games[k] for k in live]
            texts = [texts[k] for k in live]
            at = [at[k] for k in live]
            owner = [owner[k] for k in live]
    return steps, clock() - start, resets


def rust(episodes: list[Episode]) -> tuple[int, float, float]:
    """The engine's clock covers its steps alone; the call's whole time adds the building of
    the games (`Game`'s constructor, called from Rust), which the other ways count as resets."""
    work = [(ep.kwargs, ep.texts) for ep in episodes]
    start = time.perf_counter()
    steps, stepping = _core._bench_replay(work, 1)
    whole = time.perf_counter() - start
    return steps, whole, whole - stepping


def serve(episodes: list[Episode], url: str) -> tuple[int, float, float]:
    from websockets.sync.client import connect

    steps, resets = 0, 0.0
    clock = time.perf_counter
    dumps, loads = json.dumps, json.loads
    with connect(url, max_size=None) as ws:
        start = clock()
        for ep in episodes:
            t = clock()
            ws.send(dumps({"type": "reset", "data": {**ep.options, "opponent": "external"}}))
            answer = loads(ws.recv())
            resets += clock() - t
            for text in ep.texts:
                ws.send(dumps({"type": "step", "data": {"message": text}}))
                answer = loads(ws.recv())
            if answer["type"] != "observation" or not answer["data"]["done"]:
                sys.exit(f"serve did not end {ep.kwargs} on its last completion: {answer}")
            steps += len(ep.texts)
        return steps, clock() - start, resets


def textarena(steps_wanted: int, env_id: str, observe: bool, fresh: bool):
    """TextArena's negotiation over about `steps_wanted` steps: whole episodes of its own fixed
    actions, until that many steps are done."""
    import textarena as ta

    env = None if fresh else ta.make(env_id)
    steps, resets, episode = 0, 0.0, 0
    clock = time.perf_counter
    actions = TEXTARENA_ACTIONS
    start = clock()
    while steps < steps_wanted:
        t = clock()
        if fresh:
            env = ta.make(env_id)
        env.reset(num_players=2, seed=episode)
        resets += clock() - t
        episode += 1
        done, i = False, 0
        while not done:
            if observe:
                env.get_observation()
            done, _info = env.step(actions[i % 4])
            i += 1
        steps += i
    return steps, clock() - start, resets


# --- the serve process ---


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(binary: str, log: pathlib.Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen(
        [binary, "serve", "--port", str(port), "--log", str(log)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server, f"ws://127.0.0.1:{port}/ws"
        except OSError:
            time.sleep(0.2)
    server.terminate()
    sys.exit("dealgym serve did not start listening within 60 s")


def loadavg() -> str:
    try:
        return pathlib.Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "?"


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time process `pid` has used (the server's, for the serve row)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Measure:
    steps: int
    seconds: float  # the whole loop, wall clock
    resets: float  # of which resets
    cpu: float  # CPU seconds the loop used (this process; for serve, the server's too)

    @property
    def rate(self) -> float:
        return self.steps / self.seconds

    @property
    def stepping_rate(self) -> float:
        return self.steps / (self.seconds - self.resets)

    @property
    def cpu_us(self) -> float:
        return self.cpu * 1e6 / self.steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per family")
    parser.add_argument("--runs", type=int, default=5, help="measurements of each way (median)")
    parser.add_argument("--batch", type=int, default=256, help="games per step_many")
    parser.add_argument("--bin", default=str(REPO / "target/release/dealgym"))
    parser.add_argument("--ways", default=",".join(WAYS))
    args = parser.parse_args()
    families = args.families.split(",")
    ways = args.ways.split(",")

    with tempfile.TemporaryDirectory(prefix="dealgym-bench-") as tmp:
        work = pathlib.Path(tmp)
        data = {}
        for family in families:
            data[family] = generate(args.bin, family, args.episodes, work)
            check(data[family])
        if any(way.startswith("textarena") for way in ways):
            importlib.import_module("textarena")  # imported before any clock starts
        print(f"load before: {loadavg()}", flush=True)
        server = url = None
        if "serve" in ways:
            server, url = start_serve(args.bin, work / "serve.jsonl")
        measures = {
            "aec": aec_step,
            "aec+last": aec_last,
            "batch": lambda eps: batch(eps, args.batch),
            "rust": rust,
            "serve": lambda eps: serve(eps, url),
        }
        textarena_ways = {
            "textarena": ("SimpleNegotiation-v0-raw", False, False),
            "textarena+obs": ("SimpleNegotiation-v0-raw", True, False),
            "textarena-v0+obs": ("SimpleNegotiation-v0", True, True),
        }
        results: dict[tuple[str, str], list[Measure]] = {}
        try:
            for run in range(args.runs):
                for family in families:
                    episodes = data[family]
                    n_steps = sum(len(ep.texts) for ep in episodes)
                    for way in ways:
                        server_cpu = cpu_seconds(server.pid) if way == "serve" else 0.0
                        cpu = time.process_time()
                        if way in textarena_ways:
                            got = textarena(n_steps, *textarena_ways[way])
                        else:
                            got = measures[way](episodes)
                        cpu = time.process_time() - cpu
                        if way == "serve":
                            cpu += cpu_seconds(server.pid) - server_cpu
                        results.setdefault((way, family), []).append(Measure(*got, cpu))
                print(f"run {run + 1}/{args.runs} done, load {loadavg()}", flush=True)
        finally:
            if server is not None:
                server.terminate()
                server.wait()
        print(f"load after: {loadavg()}")

    def median(way: str, family: str, what: str) -> float:
        return statistics.median(getattr(m, what) for m in results[(way, family)])

    def table(title: str, cell) -> None:
        print(f"\n{title}\n")
        print("| way | " + " | ".join(families) + " |")
        print("|---|" + "---:|" * len(families))
        for way in ways:
            print(f"| {way} | " + " | ".join(cell(way, f) for f in families) + " |")

    print("\n| family | episodes | steps |\n|---|---:|---:|")
    for f in families:
        steps_done = sum(len(e.texts) for e in data[f])
        print(f"| {f} | {len(data[f]):,} | {steps_done:,} |")
    table(
        "steps/s (wall clock, median): the whole loop (without its resets)",
        lambda w, f: f"{median(w, f, 'rate'):,.0f} ({median(w, f, 'stepping_rate'):,.0f})",
    )
    table(
        "CPU µs per step (median), the whole loop: this process, and for serve the server too",
        lambda w, f: f"{median(w, f, 'cpu_us'):.1f}",
    )
    print()
    for f in families:
        if {"aec", "textarena"} <= set(ways):
            one, other = median("aec", f, "rate"), median("textarena", f, "rate")
            one_cpu, other_cpu = median("aec", f, "cpu_us"), median("textarena", f, "cpu_us")
            print(f"{f}: one env {one:,.0f} steps/s vs TextArena {other:,.0f}: "
                  f"{one / other:.2f}x (CPU per step {one_cpu:.1f} vs {other_cpu:.1f} µs: "
                  f"{other_cpu / one_cpu:.2f}x); goal >= 1x")
        if {"batch", "rust"} <= set(ways):
            stepping = median("batch", f, "stepping_rate")
            engine = median("rust", f, "stepping_rate")
            whole, engine_whole = median("batch", f, "rate"), median("rust", f, "rate")
            print(f"{f}: batch of {args.batch} steps {engine / stepping:.2f}x slower than the "
                  f"engine ({stepping:,.0f} vs {engine:,.0f} steps/s); with resets (games built) "
                  f"{engine_whole / whole:.2f}x ({whole:,.0f} vs {engine_whole:,.0f}); goal <= 2x")

if __name__ == "__main__":
    main()
