"""GRPO on dealgym negotiations with TRL's GRPOTrainer, in process (docs/src/python/trl.md).

The learner is the trainer's own model, sampled by the trainer's own backend (its vLLM, or the
model's generate on the CPU); the opponent is a built-in negotiator played by the engine.

    # rollout_func: whole episodes in dealgym's text grammar, token-exact; each record names
    # its run and optimizer step, so `dealgym report runs/trl-grpo/qwen.jsonl` charts it per step
    python trl_rollout.py --model Qwen/Qwen2.5-0.5B-Instruct --family casino --steps 20 \
        --training-run qwen
    # environment_factory: the model acts by calling tools (make_offer, accept, ...)
    python trl_rollout.py --model Qwen/Qwen2.5-0.5B-Instruct --family casino --steps 20 --tools

`--model NAME` downloads from the Hugging Face hub. Offline, `--gguf FILE` reads a local GGUF
(the real-model stage's SmolLM2-135M-Instruct, `scripts/real-model-install.sh --model-only`
prints its path) with examples/train/grpo_cpu.py's own loader. `--tiny TOKENIZER_JSON` trains
a randomly initialised 2-layer Llama over that tokenizer (with TRL's Qwen2.5 chat template): a
smoke test that downloads nothing, which .ci/trl.sh runs. Needs `pip install ".[trl]"` (and
`gguf` for `--gguf`) beside dealgym.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pathlib

os.environ.setdefault(
    "TRL_EXPERIMENTAL_SILENCE", "1"
)  # rollout_func and environment_factory are experimental


def tiny(tokenizer_json: str):
    """A random 2-layer Llama and a ChatML tokenizer read from `tokenizer_json`."""
    import trl
    from tokenizers import Tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(tokenizer_json))
    tok.add_special_tokens(
        {
            "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
            "eos_token": "<|im_end|>",
            "pad_token": "<|im_end|>",
        }
    )
    tok.chat_template = (
        pathlib.Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja"
    ).read_text()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config), tok


def gguf_model(path: pathlib.Path):
    """The model and tokenizer of a local GGUF file, by examples/train/grpo_cpu.py's ``load``
    (the one home of reading a GGUF into a trainable model)."""
    import importlib.util

    script = pathlib.Path(__file__).resolve().parents[1] / "train" / "grpo_cpu.py"
    spec = importlib.util.spec_from_file_location("grpo_cpu", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load(path)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options, checked: a combination the run could not honour is refused here."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--model", help="a Hugging Face model name (downloaded from the hub) or a local directory"
    )
    source.add_argument(
        "--gguf",
        type=pathlib.Path,
        help="a local GGUF model file, no hub needed (scripts/real-model-install.sh --model-only)",
    )
    source.add_argument(
        "--tiny", metavar="TOKENIZER_JSON", help="a random tiny Llama over this tokenizer.json"
    )
    parser.add_argument(
        "--tools",
        action="store_true",
        help="environment_factory (tool calls) instead of rollout_func",
    )
    parser.add_argument(
        "--family", default="casino", help="a two-party family (dealgym.families())"
    )
    parser.add_argument("--scenarios", type=int, default=8, help="training rows: scenarios 0..N-1")
    parser.add_argument("--group-size", type=int, default=4, help="GRPO's num_generations")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--opponent", default="rule:linear")
    parser.add_argument("--max-rounds", type=int, default=3, help="turns per seat")
    parser.add_argument("--turn-tokens", type=int, default=96, help="rollout_func: tokens per turn")
    parser.add_argument(
        "--max-completion-length", type=int, default=512, help="tokens per whole episode"
    )
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument(
        "--records", help="append each finished episode's record here (dealgym replay reads it)"
    )
    parser.add_argument(
        "--training-run",
        metavar="NAME",
        help="rollout_func: each record carries training {run: NAME, step}, so `dealgym report` "
        "charts the run per optimizer step (records default to OUT/NAME.jsonl)",
    )
    parser.add_argument("--out", default="runs/trl-grpo")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU")
    args = parser.parse_args(argv)
    if args.training_run is not None:
        if args.tools:
            parser.error(
                "--training-run names the optimizer step of rollout_func's records; TRL gives a "
                "tool environment no trainer, so --tools records cannot carry it"
            )
        if not args.training_run:
            parser.error("--training-run: a run's name is not empty")
        if args.records is None:
            args.records = str(pathlib.Path(args.out) / f"{args.training_run}.jsonl")
    return args


def main() -> None:
    args = parse_args()

    from trl import GRPOConfig, GRPOTrainer

    import dealgym.trl

    if args.tiny:
        model, tok = tiny(args.tiny)
    elif args.gguf:
        model, tok = gguf_model(args.gguf)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model, tok = (
            AutoModelForCausalLM.from_pretrained(args.model),
            AutoTokenizer.from_pretrained(args.model),
        )
    rules = {"max_rounds": args.max_rounds}
    config = GRPOConfig(
        output_dir=args.out,
        use_cpu=args.cpu,
        bf16=not args.cpu,
        gradient_checkpointing=False,
        per_device_train_batch_size=args.group_size,
        num_generations=args.group_size,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=2 * args.max_rounds + 2,
        max_steps=args.steps,
        learning_rate=args.learning_rate,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
    )
    if args.tools:
        factory = functools.partial(
            dealgym.trl.TOOLS[args.family],
            opponent=args.opponent,
            rules=rules,
            records=args.records,
        )
        trainer = GRPOTrainer(
            model=model,
            processing_class=tok,
            args=config,
            train_dataset=dealgym.trl.dataset(args.family, args.scenarios, rules=rules),
            environment_factory=factory,
        )
        rollout = None
    else:
        rollout = dealgym.trl.make_rollout_func(
            opponent=args.opponent,
            rules=rules,
            turn_tokens=args.turn_tokens,
            records=args.records,
            training_run=args.training_run,
        )
        trainer = GRPOTrainer(
            model=model,
            processing_class=tok,
            args=config,
            train_dataset=dealgym.trl.dataset(args.family, args.scenarios, kind="rollout"),
            reward_funcs=[dealgym.trl.rollout_reward],
            rollout_func=rollout,
        )
    trainer.train()
    dealgym.trl.close_records()

    reward_key = "reward"
    for entry in trainer.state.log_history:
        if reward_key in entry:
            shares = {
                k.split("/", 1)[1]: round(v, 3)
                for k, v in entry.items()
                if k.startswith("dealgym/") and v
            }
            print(
                f"step {entry['step']}: reward {entry[reward_key]:.3f} (std {entry['reward_std']:.3f})",
                shares or "",
            )
    summary = {"steps": trainer.state.global_step, "mode": "tools" if args.tools else "rollout"}
    if rollout is not None:
        summary["outcomes"] = dict(rollout.counts)
    if args.records:
        summary["records"] = args.records
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
