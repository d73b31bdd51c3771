"""GRPO with TRL on a 2-core CPU: SmolLM2-135M-Instruct learns to negotiate against a rule
opponent, every step's episodes written as ordinary dealgym records (docs/src/python/train.md).

    # the model the real-model stage installs (scripts/real-model-install.sh), its GGUF weights
    # de-quantized into transformers
    python examples/train/grpo_cpu.py --run lr-1e-5 --learning-rate 1e-5 --steps 30
    python examples/train/grpo_cpu.py --run lr-0 --learning-rate 0 --steps 30     # the control
    dealgym report runs/train/lr-1e-5.jsonl runs/train/lr-0.jsonl --out runs/train/report

examples/train/run.sh does all three, the two runs side by side. Each record carries
`training.run` and `training.step` (the optimizer step whose policy played it), so the report
charts the mean reward, the format-ok rate and the deal rate per step, one line per run. The
control has the same seeds, rows, sampling and code path, with a learning rate of 0: the
policy never moves, so its curve is the noise a trained curve is read against.

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

#: glibc's mmap threshold while the step trains: a block at least this large is mapped on its
#: own and unmapped when freed. glibc's own threshold rises with every large block freed (to
#: 32 MB), after which the layers' activations come from the heap, whose freed pages stay
#: resident: the resident size climbed from 2.1 to 4.4 GiB through a step's forward pass.
MMAP_THRESHOLD = 1 << 20
#: ... and while it samples: generate's many small blocks (a growing cache) reused from the heap.
#: Mapped each on its own, they cost generate 40% more CPU time (30 s against 42 s for 8 prompts
#: of 600 ids and 64 new ids each); the heap's freed pages are handed back when sampling ends.
SAMPLING_MMAP_THRESHOLD = 32 << 20
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
    """``rollout`` as TRL calls it, sampling at SAMPLING_MMAP_THRESHOLD and training again at
    MMAP_THRESHOLD once it returns, with the heap's freed pages handed back (``malloc_trim``)."""
    if libc is None:
        return rollout

    def sample(prompts, trainer):
        libc.mallopt(M_MMAP_THRESHOLD, SAMPLING_MMAP_THRESHOLD)
        try:
            return rollout(prompts, trainer)
        finally:
            libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
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


def wall_clock(seconds: float):
    """A callback that ends training after the first step to finish past ``seconds``: two runs
    side by side on a shared CPU reach the same time, not always the same step."""
    from transformers import TrainerCallback

    class WallClock(TrainerCallback):
        def __init__(self) -> None:
            self.started = time.time()

        def on_step_end(self, args, state, control, **kwargs):
            if time.time() - self.started >= seconds:
                control.should_training_stop = True
            return control

    return WallClock()


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
        "--format-weight",
        type=float,
        default=0.5,
        help="the reward: terminal + this × the learner's format-ok share of its turns",
    )
    parser.add_argument(
        "--no-shaping", action="store_true", help="leave out SHAPING's partial credit"
    )
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument(
        "--max-minutes",
        type=float,
        default=0.0,
        help="stop after the step that passes this much wall time (0: run every step)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's own)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/train"))
    args = parser.parse_args()

    import torch
    from trl import GRPOConfig, GRPOTrainer

    import dealgym.trl

    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    records = args.out / f"{args.run}.jsonl"
    if records.exists():
        raise SystemExit(f"{records} exists: a run's records are its own; move it or pick --run")
    started = time.time()
    libc = lean_memory()
    model, tok = load(args.gguf)
    rules = {"max_rounds": args.max_rounds}
    config = GRPOConfig(
        output_dir=str(args.out / args.run),
        use_cpu=True,
        bf16=False,
        seed=args.seed,
        per_device_train_batch_size=args.group_size * args.groups,
        num_generations=args.group_size,
        max_completion_length=args.max_completion_length,
        temperature=args.temperature,
        max_steps=args.steps,
        learning_rate=args.learning_rate,
        lr_scheduler_type="constant",
        beta=0.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
    )
    rewards: dict = {"weights": {"terminal": 1.0, "format": args.format_weight}}
    if not args.no_shaping:
        rewards["weights"]["rules"] = 1.0
        rewards["rules"] = SHAPING
    rollout = dealgym.trl.make_rollout_func(
        opponent=args.opponent,
        rules=rules,
        rewards=rewards,
        turn_tokens=args.turn_tokens,
        records=records,
        training_run=args.run,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tok,
        args=config,
        train_dataset=dealgym.trl.dataset(
            args.family, args.scenarios, kind="rollout", seed=args.seed
        ),
        reward_funcs=[dealgym.trl.rollout_reward],
        rollout_func=sampling_heap(rollout, libc),
        callbacks=[wall_clock(args.max_minutes * 60)] if args.max_minutes else None,
    )
    trainer.train()
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
    print(
        json.dumps(
            {
                "run": args.run,
                "learning_rate": args.learning_rate,
                "steps": trainer.state.global_step,
                "rewards": rewards,
                "wall_s": round(time.time() - started, 1),
                "records": str(records),
                "outcomes": dict(rollout.counts),
            }
        )
    )


if __name__ == "__main__":
    main()
