"""The loop people run, side by side in one process (issue 43): the README's PettingZoo loop
against TextArena's README loop, each exactly as its README writes it, and `step_many` from
several Python threads. A benchmark, not a test: run it by hand from the repository root in the
venv of `steps.py` (the release build of the package, TextArena 0.7.4):

    python crates/python/bench/readme_loop.py [--families casino,craigslist] [--runs 7]

The ways, each over the same episodes (written and checked by `steps.py`'s `generate` and
`check`: the built-in negotiators' completions, replayed into a `Game` before any clock starts):

- ``readme``: the README's loop, per episode: `env.reset(seed=0, options=...)` (the options
  pick the episode's scenario and setup, so its completions fit), then `for agent in
  env.agent_iter(): obs, reward, terminated, truncated, info = env.last(); action = None if
  terminated or truncated else my_model(obs["messages"]); env.step(action)`, then the README's
  last line's `env.game.outcome["kind"], env.game.rewards` (not printed). `my_model` answers the
  episode's next completion.
- ``readme+state``: the same loop with a policy that also reads `obs["state"]` every step.
- ``textarena-readme``: TextArena's README loop on `SimpleNegotiation-v0-raw`, per episode:
  `env.reset(num_players=2, seed=episode)`, `while not done: player_id, observation =
  env.get_observation(); action = agents[player_id](observation); done, step_info =
  env.step(action=action)`, then `rewards, game_info = env.close()`; the agents answer its
  own fixed actions (offers, an accept, a deny), whole episodes until as many steps as ours.
- ``loop xN`` and ``step_many xN``: N Python threads (``--threads``, 1 and N), each stepping
  its own disjoint share of the episodes: ``loop`` with `Game.step` one game at a time,
  ``step_many`` with `_core.step_many` over ``--batch`` games (`steps.py`'s ``batch``). Both
  release the interpreter's lock while the engine works; `step_many` once per batch.

The ways take turns, `--runs` times; a cell is the median of steps/s over the whole loop,
resets included. The machine is shared: read the ratios, measured in the same run, not the
absolute rates.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from steps import REPO, TEXTARENA_ACTIONS, Episode, batch, check, generate, loadavg  # noqa: E402

from dealgym import _core  # noqa: E402
from dealgym.pettingzoo import DealAECEnv  # noqa: E402


def readme(episodes: list[Episode], read_state: bool = False) -> int:
    env = DealAECEnv(episodes[0].kwargs["family"])
    steps = 0
    for ep in episodes:
        texts = iter(ep.texts)

        def my_model(messages, texts=texts):
            return next(texts)

        env.reset(seed=0, options=ep.options)
        for agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if read_state:
                obs["state"]
            action = None if terminated or truncated else my_model(obs["messages"])
            env.step(action)
        env.game.outcome["kind"], env.game.rewards
        steps += len(ep.texts)
    return steps


def textarena_readme(steps_wanted: int) -> int:
    import textarena as ta

    actions = TEXTARENA_ACTIONS
    env = ta.make(env_id="SimpleNegotiation-v0-raw")
    steps, episode = 0, 0
    while steps < steps_wanted:
        turn = iter(range(1 << 30))

        def agent(observation, turn=turn):
            return actions[next(turn) % 4]

        agents = {0: agent, 1: agent}
        env.reset(num_players=len(agents), seed=episode)
        episode += 1
        done = False
        while not done:
            player_id, observation = env.get_observation()
            action = agents[player_id](observation)
            done, step_info = env.step(action=action)
            steps += 1
        rewards, game_info = env.close()
    return steps


def loop(episodes: list[Episode]) -> int:
    """`Game.step` one game at a time: a new `Game` per episode, a step per completion."""
    Game = _core.Game
    steps = 0
    for ep in episodes:
        game = Game(**ep.kwargs)
        for text in ep.texts:
            game.step(text)
        steps += len(ep.texts)
    return steps


def threaded(episodes: list[Episode], threads: int, work) -> int:
    """`work` over `threads` disjoint shares of `episodes`, each on its own Python thread."""
    shares = [episodes[i::threads] for i in range(threads)]
    done = [0] * threads

    def run(i: int) -> None:
        done[i] = work(shares[i])

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(done)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default="casino,craigslist,dnd,job_interview,ahp")
    parser.add_argument("--episodes", type=int, default=1000, help="episodes per family")
    parser.add_argument("--runs", type=int, default=7, help="measurements of each way (median)")
    parser.add_argument("--batch", type=int, default=256, help="games per step_many")
    parser.add_argument("--threads", type=int, default=2, help="Python threads of the x N ways")
    parser.add_argument("--bin", default=str(REPO / "target/release/dealgym"))
    parser.add_argument("--ways", default="readme,readme+state,textarena-readme,threads")
    args = parser.parse_args()
    families = args.families.split(",")
    ways = []
    for way in args.ways.split(","):
        if way == "threads":
            ways += [f"{kind} x{n}" for kind in ("loop", "step_many") for n in (1, args.threads)]
        else:
            ways.append(way)

    def measure(way: str, episodes: list[Episode]) -> int:
        if way == "readme":
            return readme(episodes)
        if way == "readme+state":
            return readme(episodes, read_state=True)
        if way == "textarena-readme":
            return textarena_readme(sum(len(ep.texts) for ep in episodes))
        kind, n = way.split(" x")
        work = loop if kind == "loop" else (lambda eps: batch(eps, args.batch)[0])
        return threaded(episodes, int(n), work)

    with tempfile.TemporaryDirectory(prefix="dealgym-bench-") as tmp:
        data = {}
        for family in families:
            data[family] = generate(args.bin, family, args.episodes, pathlib.Path(tmp))
            check(data[family])
    if "textarena-readme" in ways:
        import textarena  # noqa: F401  (imported before any clock starts)
    print(f"load before: {loadavg()}", flush=True)
    rates: dict[tuple[str, str], list[float]] = {}
    for run in range(args.runs):
        for family in families:
            for way in ways:
                start = time.perf_counter()
                steps = measure(way, data[family])
                rates.setdefault((way, family), []).append(steps / (time.perf_counter() - start))
        print(f"run {run + 1}/{args.runs} done, load {loadavg()}", flush=True)
    print(f"load after: {loadavg()}")

    def median(way: str, family: str) -> float:
        return statistics.median(rates[(way, family)])

    print("\nsteps/s (wall clock, median of the runs, the ways taking turns)\n")
    print("| way | " + " | ".join(families) + " |")
    print("|---|" + "---:|" * len(families))
    for way in ways:
        print(f"| {way} | " + " | ".join(f"{median(way, f):,.0f}" for f in families) + " |")
    print()
    for f in families:
        if {"readme", "textarena-readme"} <= set(ways):
            ours, theirs = median("readme", f), median("textarena-readme", f)
            ratios = [a / b for a, b in zip(rates[("readme", f)], rates[("textarena-readme", f)])]
            print(f"{f}: README loop {ours:,.0f} vs TextArena's README loop {theirs:,.0f} steps/s: "
                  f"{ours / theirs:.2f}x (per run: {min(ratios):.2f}-{max(ratios):.2f}x); goal >= 1x")
        for kind in ("loop", "step_many"):
            one, many = f"{kind} x1", f"{kind} x{args.threads}"
            if {one, many} <= set(ways):
                print(f"{f}: {kind} on {args.threads} threads {median(many, f) / median(one, f):.2f}x "
                      f"one thread ({median(many, f):,.0f} vs {median(one, f):,.0f} steps/s)")


if __name__ == "__main__":
    main()
