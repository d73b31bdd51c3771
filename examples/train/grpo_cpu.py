"""GRPO with TRL on a 2-core CPU: SmolLM2-135M-Instruct learns to negotiate against a rule
opponent, every step's episodes written as ordinary dealgym records (docs/src/python/train.md).

    # the model the real-model stage installs (scripts/real-model-install.sh), its GGUF weights
    # de-quantized into transformers
    python examples/train/grpo_cpu.py --run lr-3e-5 --learning-rate 3e-5 --steps 30
    python examples/train/grpo_cpu.py --run lr-0 --learning-rate 0 --steps 30     # the control
    dealgym report runs/train/lr-3e-5.jsonl runs/train/lr-0.jsonl --out runs/train/report \
        --training-control lr-0

examples/train/run.sh does all three, one run after the other. Each record carries
`training.run` and `training.step` (the optimizer step whose policy played it), so the report
charts the mean reward, the format-ok rate, the deal rate and ρ over deals per step, one line
per run. The control has the same seeds, rows, sampling and code path, with a learning rate of
0: the policy never moves, so its curve is the noise a trained curve is read against.

The default setup pays for bargaining: the BATNA paper's threshold reward with the learner
regulated, the format credit decaying once the format is learnt (FormatCredit); `--reward
format --no-regulate-learner` is the first run's. A run saves a checkpoint every --save-steps
steps and resumes from the last one when started again with the same --run and --out.

Needs the packages of crates/python/requirements-trl.txt (TRL, torch, and `gguf` to read the
model) and dealgym built from this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental

DEFAULT_GGUF = (
    pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
    / "dealgym"
    / "models"
    / "SmolLM2-135M-Instruct.Q4_1.gguf"
)


def load(gguf: pathlib.Path):
    """The GGUF's tokenizer (with its chat template) and its weights de-quantized into a plain
    float32 ``LlamaForCausalLM``. transformers loads a GGUF as a model marked quantized, which
    the Trainer refuses to train in full; de-quantized on load, its weights are plain float32
    tensors already, so the mark is taken off the model itself. No second model is built beside
    it: a copy of the weights (the first model kept until the end of training, or its pages kept
    by the allocator) was 0.4 GiB more resident."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    if not gguf.is_file():
        raise SystemExit(
            f"{gguf}: no such model file; scripts/real-model-install.sh installs it, or pass --gguf"
        )
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # De-quantized on load even where transformers could keep the weights packed (with the
    # `kernels` package installed), which no plain model could take.
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent,
        gguf_file=gguf.name,
        quantization_config=GgufConfig(dequantize=True),
        dtype=torch.float32,
    )
    packed = sorted({str(p.dtype) for p in model.parameters() if p.dtype != torch.float32})
    if packed:
        raise SystemExit(f"{gguf}: weights left packed ({', '.join(packed)}), not de-quantized")
    # The quantized mark: the quantizer (what `is_quantized` reads) and its config entry.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return model, tok


#: The tile of TRL's fused LM head (the completion's log-probabilities without the whole logits),
#: vocabulary columns by tokens. TRL's own, 32,768 by 4,096 in float32, is 512 MB; on the CPU its
#: torch fallback makes four or five temporaries of a tile's size at once, forward and backward,
#: which were the step's peak. 4,096 by 2,048 is 32 MB, and the same sums in another order.
HEAD_TILE = (4096, 2048)

#: glibc's mmap threshold, fixed for the whole run: a block at least this large is mapped on
#: its own and unmapped when freed. glibc's own threshold wanders (it rises with every large
#: block freed); fixed, a run's memory does not depend on its history. The first runs fixed it
#: at 1 MB, which held a step to 3.0 GiB but mapped every activation afresh: the kernel zeroed
#: new pages for each, 90 s of system time in two steps, and the backward pass took 44 s
#: against 28 s at 32 MB (bf16, gradient checkpointing; docs/src/python/train.md, "Speed").
MMAP_THRESHOLD = 32 << 20
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def lean_memory():
    """Hold the step's resident memory down: TRL's fused LM head in HEAD_TILE tiles, and
    glibc's malloc at a fixed MMAP_THRESHOLD. The head's tiles are module constants of trl
    1.16 (crates/python/requirements-trl.txt); a trl without them is refused, not trained at
    TRL's size unnoticed. Answers glibc (for ``sampling_heap``), or None on another C library,
    whose allocator is left as it is."""
    import ctypes

    import trl
    import trl.kernels.chunked_logprob as kernel
    import trl.trainer.utils as utils

    vocab, tokens = HEAD_TILE
    for module, name, value in (
        (utils, "_CHUNKED_LOGPROB_CHUNK_SIZE", vocab),
        (kernel, "TOKEN_CHUNK_SIZE", tokens),
    ):
        if not isinstance(getattr(module, name, None), int):
            raise SystemExit(
                f"trl {trl.__version__} has no {module.__name__}.{name}, the fused LM head's tile "
                "this script sets: use trl 1.16 (crates/python/requirements-trl.txt)"
            )
        setattr(module, name, value)
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    if libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1:
        raise SystemExit(f"glibc refused mallopt(M_MMAP_THRESHOLD, {MMAP_THRESHOLD})")
    return libc


def sampling_heap(rollout, libc):
    """``rollout`` as TRL calls it, with the heap's freed pages handed back once it returns
    (``malloc_trim``): the sampler's cache is freed before the step trains."""
    if libc is None:
        return rollout

    def sample(prompts, trainer):
        try:
            return rollout(prompts, trainer)
        finally:
            libc.malloc_trim(0)

    return sample


#: Partial credit for the turn format's parts, per attempt (dealgym's `[[rewards.rules]]`, summed
#: over the learner's attempts): a 135M model rarely writes a whole well-formed turn at first, and
#: a GRPO group whose episodes all forfeit alike has no advantage to learn from.
SHAPING = [
    {"name": "thought_line", "pattern": r"(?m)^Thought:", "target": "raw", "score": 0.1},
    {"name": "talk_line", "pattern": r"(?m)^Talk:", "target": "raw", "score": 0.1},
    {
        "name": "action_token",
        "pattern": r"(?m)^Action:\s*\[(SUBMIT_DEAL|ACCEPT_DEAL|REJECT_DEAL|WALK_AWAY)\]",
        "target": "raw",
        "score": 0.2,
    },
]


#: While the format is learnt (FormatCredit), an attempt that walks away costs what a forfeit
#: does, whatever its format: the way out of −ψ is then a readable offer, not an exit. Not
#: anchored to the Action line, on purpose: the engine reads a malformed turn's action from
#: anywhere in it, and a `[WALK_AWAY]` mentioned elsewhere costs 1 too (each attempt counts).
WALK_AWAY_WHILE_LEARNING = {
    "name": "walk_away_while_learning",
    "pattern": r"\[WALK_AWAY\]",
    "target": "raw",
    "score": -1.0,
}

#: The BATNA paper's threshold reward (presets/batna-threshold.toml, §2.1, App. A): on a price
#: task the terminal reward is the learner's surplus share ρ on a deal, 0 with no deal, −ψ for
#: a format violation; items and issues deals below τ are worth −γ. The preset's episode rules
#: (format_retries = 0, 6 rounds) are not taken: a turn keeps dealgym's one correction, and a
#: seat has 3 turns (--max-rounds).
BATNA_THRESHOLD = {"kind": "threshold", "tau": 0.4, "gamma": 0.5, "psi": 1.0, "psi_on": "violation"}


class FormatCredit:
    """The format credit's schedule: the reward is ``terminal + w × format-ok share + r ×
    SHAPING``, with ``w = weight × f`` and ``r = rules × f``. ``f`` is 1 until a step's
    learner format-ok share (over its episodes that ended) reaches ``threshold``; from the next
    step on it falls linearly to 0 over ``decay`` steps and stays there. Until then only a
    forfeit costs the terminal reward's ψ, and an attempt that walks away costs as much
    (WALK_AWAY_WHILE_LEARNING); from then on every format violation costs ψ (the preset's
    ``psi_on = "violation"``) and walking away is free again. Once the format is learnt, the reward is the terminal
    reward alone: walking away or forfeiting no longer earns format credit, a violation costs
    ψ, and only a deal's surplus pays.

    ``passed_at`` is the step whose share first reached the threshold (None before). The
    weights in force score every episode of a step, so each record's ``reward_config``
    holds them beside its ``training.step``; ``log`` has one entry per step."""

    def __init__(
        self, weight: float, rules: float, threshold: float, decay: int, staged: bool = True
    ) -> None:
        if decay < 1:
            raise SystemExit(f"--format-decay-steps {decay}: at least 1")
        self.weight, self.rules, self.threshold, self.decay = weight, rules, threshold, decay
        self.staged = staged  # ψ's scope and the walk-away cost follow the threshold
        self.passed_at: int | None = None
        self.log: list[dict] = []

    def factor(self, step: int) -> float:
        if self.passed_at is None or step <= self.passed_at:
            return 1.0
        return max(0.0, 1.0 - (step - self.passed_at) / self.decay)

    def rewards(self, step: int, terminal: dict) -> dict:
        f = self.factor(step)
        learning = self.staged and self.passed_at is None
        weights = {"terminal": 1.0}
        rewards = dict(terminal)
        if self.weight and f > 0:
            weights["format"] = round(self.weight * f, 6)
        rules = list(SHAPING) if self.rules and f > 0 else []
        if learning:
            # While the format is learnt, walking away costs what a forfeit does, shaping or
            # not: a malformed turn whose action reads as [WALK_AWAY] ends the episode with no
            # forfeit, and three tries (two in bf16, one in fp32) learnt that escape from −ψ,
            # not the format. (f is 1 until the threshold is passed.)
            rules.append(WALK_AWAY_WHILE_LEARNING)
        if rules:
            weights["rules"] = round(self.rules * f, 6) if self.rules else 1.0
            rewards["rules"] = rules
        if learning:
            # ... and only a forfeit costs ψ: with every violation at −ψ, a policy that rarely
            # writes a whole well-formed turn scores −ψ on nearly every episode, and the partial
            # credit's differences are all a group has to learn from (a first try stayed at
            # 0-5% format-ok for 19 steps: docs/src/python/train.md). From the step after the
            # threshold is passed, every violation costs ψ, as the paper has it.
            rewards["psi_on"] = "forfeit"
        rewards["weights"] = weights
        return rewards

    def observe(self, step: int, share: float | None, ended: int) -> None:
        """A step's learner format-ok share over its ``ended`` episodes (None: none ended)."""
        entry = {"step": step, "factor": self.factor(step), "format_ok": share, "ended": ended}
        self.log.append(entry)
        if self.passed_at is None and share is not None and share >= self.threshold:
            self.passed_at = step

    def restore(self, entries: list[dict]) -> None:
        """The schedule as a resumed run had it: its steps' entries, in order."""
        self.passed_at, self.log = None, []
        for e in entries:
            self.observe(e["step"], e["format_ok"], e["ended"])


def scheduled(rollout, credit: FormatCredit, terminal: dict, journal: pathlib.Path):
    """``rollout`` as TRL calls it, with the step's rewards from ``credit`` set before it
    plays, and the step's learner format-ok share handed to ``credit`` after; each step's
    entry is appended to ``journal`` (what a resumed run reads back)."""

    def play(prompts, trainer):
        step = int(trainer.state.global_step)
        rollout.rewards = credit.rewards(step, terminal)
        began = time.time()
        out = rollout(prompts, trainer)
        sampled_s = round(time.time() - began, 1)
        shares = [
            g.outcome["metrics"]["seats"][g.learner_role]["format_ok_rate"]
            for g, o in zip(rollout.games, rollout.outcomes, strict=True)
            if o not in ("unfinished", "error")
        ]
        credit.observe(step, sum(shares) / len(shares) if shares else None, len(shares))
        entry = dict(
            credit.log[-1],
            weights=rollout.rewards["weights"],
            psi_on=rollout.rewards.get("psi_on"),
            sample_s=sampled_s,
            at=round(time.time(), 1),
            **(rollout.cache_work or {}),
        )
        with open(journal, "a") as f:
            f.write(json.dumps(entry) + "\n")
        print(f"step {step}: {json.dumps(entry)}", flush=True)
        return out

    return play


def wall_clock(seconds: float):
    """A callback that ends training after the first step to finish past ``seconds`` of this
    process (a resumed run has its own), saving a checkpoint there, so that a run started again
    resumes from where this one stopped."""
    from transformers import TrainerCallback

    class WallClock(TrainerCallback):
        def __init__(self) -> None:
            self.started = time.time()

        def on_step_end(self, args, state, control, **kwargs):
            if time.time() - self.started >= seconds:
                control.should_training_stop = True
                control.should_save = args.save_strategy != "no"
            return control

    return WallClock()


def trainer_class(learning_rate: float):
    """GRPOTrainer, or for the control (a learning rate of 0) a GRPOTrainer whose steps compute
    no loss: AdamW's update at a learning rate of 0 is 0 whatever the gradient (TRL's weight
    decay is 0 too), so the control's steps are its rollouts alone, the same rollouts, seeds
    and random draws as a trained run's (the backward pass draws nothing)."""
    import torch
    from trl import GRPOTrainer

    if learning_rate:
        return GRPOTrainer

    class Control(GRPOTrainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if return_outputs:
                raise ValueError("the control computes no outputs")
            return torch.zeros((), requires_grad=True, device=self.accelerator.device)

    return Control


def resume_point(out: pathlib.Path, run: str) -> tuple[str | None, int]:
    """The run's last checkpoint (under OUT/RUN) and its optimizer step, or (None, 0)."""
    from transformers.trainer_utils import get_last_checkpoint

    folder = out / run
    last = get_last_checkpoint(str(folder)) if folder.is_dir() else None
    if last is None:
        return None, 0
    state = json.loads((pathlib.Path(last) / "trainer_state.json").read_text())
    return last, int(state["global_step"])


def keep_before(path: pathlib.Path, step: int, key) -> list[dict]:
    """Rewrites a JSON-lines file with only the lines of steps before ``step`` (a resumed run
    plays step ``step`` again), each line as it was written; a last line cut short by a crash
    is dropped. Answers the kept entries. Written beside the file and renamed over it, so a
    crash here leaves the old file whole."""
    if not path.exists():
        return []
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept, entries = [], []
    for i, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            if i == len(lines) - 1:
                break  # the line a crash cut short: its episode is played again
            raise SystemExit(f"{path}:{i + 1}: not a JSON line, and not the last one")
        if key(entry) < step:
            kept.append(line)
            entries.append(entry)
    part = path.with_name(path.name + ".part")
    part.write_text("".join(line + "\n" for line in kept))
    part.replace(path)
    return entries


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run", required=True, help="the run's name in its records")
    parser.add_argument("--learning-rate", type=float, required=True, help="0: the control")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--gguf", type=pathlib.Path, default=DEFAULT_GGUF)
    parser.add_argument("--family", default="ahp")
    parser.add_argument("--opponent", default="rule:linear")
    parser.add_argument("--scenarios", type=int, default=64, help="training rows: scenarios 0..N-1")
    parser.add_argument("--group-size", type=int, default=4, help="GRPO's num_generations")
    parser.add_argument("--groups", type=int, default=2, help="GRPO groups per step")
    parser.add_argument("--max-rounds", type=int, default=3, help="turns per seat")
    parser.add_argument("--turn-tokens", type=int, default=64, help="tokens per turn")
    parser.add_argument(
        "--max-completion-length", type=int, default=320, help="tokens per whole episode"
    )
    parser.add_argument(
        "--reward",
        choices=["batna", "format"],
        default="batna",
        help="batna: the BATNA paper's threshold reward (BATNA_THRESHOLD), the format credit "
        "decaying once learnt (FormatCredit); format: the first run's (terminal reward of "
        "dealgym's default kind, constant format credit)",
    )
    parser.add_argument(
        "--format-weight",
        type=float,
        default=0.5,
        help="the reward: terminal + this × the learner's format-ok share of its turns",
    )
    parser.add_argument(
        "--no-shaping", action="store_true", help="leave out SHAPING's partial credit"
    )
    parser.add_argument(
        "--format-threshold",
        type=float,
        default=0.6,
        help="batna: the step's learner format-ok share after which the credit decays",
    )
    parser.add_argument(
        "--format-decay-steps",
        type=int,
        default=4,
        help="batna: steps over which the format credit falls to 0",
    )
    parser.add_argument(
        "--regulate-learner",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="regulation for the learner (default: on with --reward batna, off with format)",
    )
    parser.add_argument(
        "--no-cache-across-turns",
        action="store_true",
        help="sample each turn with generate over its whole sequence (the slow way, to compare)",
    )
    parser.add_argument(
        "--precision",
        choices=["fp32", "bf16"],
        default="fp32",
        help="fp32: the book's runs; bf16: float32 weights, products in bfloat16 under torch's CPU "
        "autocast, a step in less than half the time (docs/src/python/train.md, Speed)",
    )
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=0.0,
        help="stop after the step that passes this much wall time (0: run every step)",
    )
    parser.add_argument(
        "--save-steps", type=int, default=5, help="a checkpoint every this many steps (0: none)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's own)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/train"))
    args = parser.parse_args()
    if args.regulate_learner is None:
        args.regulate_learner = args.reward == "batna"

    import torch
    from trl import GRPOConfig

    import dealgym.trl

    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    records = args.out / f"{args.run}.jsonl"
    journal = args.out / f"{args.run}.schedule.jsonl"
    checkpoint, resumed = resume_point(args.out, args.run)
    if checkpoint is None and records.exists() and not journal.exists():
        raise SystemExit(
            f"{records} exists and is not this script's run (no {journal.name}): a run's "
            "records are its own; move it or pick --run"
        )
    # Without a checkpoint (a run stopped before its first), the run starts again at step 0.
    # A resumed run plays its checkpoint's step again: what the steps from there wrote goes.
    keep_before(records, resumed, lambda r: r["training"]["step"])
    entries = keep_before(journal, resumed, lambda e: e["step"])
    started = time.time()
    libc = lean_memory()
    model, tok = load(args.gguf)
    rules = {"max_rounds": args.max_rounds, "regulate_learner": args.regulate_learner}
    batch = args.group_size * args.groups
    config = GRPOConfig(
        output_dir=str(args.out / args.run),
        use_cpu=True,
        # Mixed precision: float32 weights and optimizer, matrix products in bfloat16 under
        # torch's CPU autocast, in the loss and (dealgym.trl) in sampling alike.
        bf16=args.precision == "bf16",
        seed=args.seed,
        per_device_train_batch_size=batch,
        num_generations=args.group_size,
        max_completion_length=args.max_completion_length,
        temperature=args.temperature,
        max_steps=args.steps,
        learning_rate=args.learning_rate,
        lr_scheduler_type="constant",
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="steps" if args.save_steps else "no",
        save_steps=args.save_steps or 500,
        save_total_limit=1,
        # TRL's default, said here: the backward pass recomputes each layer's activations
        # (without it a step's peak is 15 GB and the step no faster).
        gradient_checkpointing=True,
    )
    if args.reward == "batna":
        terminal = dict(BATNA_THRESHOLD)
        credit = FormatCredit(
            args.format_weight,
            0.0 if args.no_shaping else 1.0,
            args.format_threshold,
            args.format_decay_steps,
        )
        credit.restore(entries)
    else:
        terminal = {}
        # The first run's reward: constant weights (a threshold never reached).
        credit = FormatCredit(
            args.format_weight, 0.0 if args.no_shaping else 1.0, 2.0, 1, staged=False
        )
    rollout = dealgym.trl.make_rollout_func(
        opponent=args.opponent,
        rules=rules,
        rewards=credit.rewards(resumed, terminal),
        turn_tokens=args.turn_tokens,
        records=records,
        training_run=args.run,
        cache_across_turns=not args.no_cache_across_turns,
    )
    rollout.skip(resumed * batch)
    # Every parameter of the run, first in its log.
    print(
        json.dumps(
            {
                "parameters": {k: str(v) if isinstance(v, pathlib.Path) else v for k, v in vars(args).items()},
                "rules": rules,
                "terminal_reward": terminal,
                "shaping": None if args.no_shaping else SHAPING,
                "grpo": {
                    "batch": batch,
                    "num_generations": args.group_size,
                    "beta": config.beta,
                    "lr_scheduler": getattr(config.lr_scheduler_type, "value", config.lr_scheduler_type),
                    "head_tile": HEAD_TILE,
                },
                "resumed_from": checkpoint,
                "resumed_step": resumed,
                "torch_threads": torch.get_num_threads(),
            }
        ),
        flush=True,
    )
    if not args.learning_rate and config.weight_decay:
        raise SystemExit(f"the control needs weight_decay 0, not {config.weight_decay}")
    trainer = trainer_class(args.learning_rate)(
        model=model,
        processing_class=tok,
        args=config,
        train_dataset=dealgym.trl.dataset(
            args.family, args.scenarios, kind="rollout", seed=args.seed
        ),
        reward_funcs=[dealgym.trl.rollout_reward],
        rollout_func=sampling_heap(scheduled(rollout, credit, terminal, journal), libc),
        callbacks=[wall_clock(args.max_minutes * 60)] if args.max_minutes else None,
    )
    trainer.train(resume_from_checkpoint=checkpoint)
    dealgym.trl.close_records()

    # TRL's own log of each step: the reward over every rollout, and each outcome's share,
    # `unfinished` and `error` included, which leave no record (the records hold the episodes
    # that ended; the report's per-step counts are theirs).
    with open(args.out / f"{args.run}.steps.jsonl", "w") as f:
        for entry in trainer.state.log_history:
            if "reward" in entry:
                f.write(json.dumps(entry) + "\n")
    for entry in trainer.state.log_history:
        if "reward" in entry:
            shares = {
                k.split("/", 1)[1]: round(v, 3)
                for k, v in entry.items()
                if k.startswith("dealgym/") and v
            }
            print(
                f"{args.run} step {entry['step']}: reward {entry['reward']:.3f} "
                f"(std {entry['reward_std']:.3f})",
                shares or "",
                flush=True,
            )
    summary = json.dumps(
        {
            "run": args.run,
            "learning_rate": args.learning_rate,
            "steps": trainer.state.global_step,
            "resumed_step": resumed,
            "format_credit_passed_at": credit.passed_at,
            "wall_s": round(time.time() - started, 1),
            "records": str(records),
            "outcomes": dict(rollout.counts),
        }
    )
    # The run's end, for run.sh: a finished run is not trained again, and its steps set the
    # control's.
    (args.out / f"{args.run}.summary.json").write_text(summary + "\n")
    print(summary)


if __name__ == "__main__":
    main()
