"""The model's own sampler for ``dealgym.trl``'s rollouts, with each episode's KV cache kept
across its turns.

A seat's prompt at turn k+1 is its prompt at turn k, what it sampled, and the messages since:
the sequence only grows. ``generate`` would re-read the whole sequence at every turn (about 600
ids of system prompt and history, for every row of the batch); ``TurnCache`` keeps the rows'
keys and values from turn to turn and reads only the ids added since, all rows in one batch.

Layout: one batched cache over the rows still playing. Each turn's new ids are a block appended
to every row, right-aligned with padding before them, so that each row's last id sits in the
block's last column (whose logits start the turn). A 2-D attention mask marks each row's real
ids, and each real id gets its position in its own row (the count of real ids before it), so a
row reads exactly its own sequence, as it would alone and unpadded. A row whose sequence is
not an extension of what its cache holds (nothing in dealgym's token-exact rows does that) is
read again from its first id, its old columns masked out; a row that stops playing leaves the
batch. The first block of a call is read once per distinct prompt: a GRPO group's rows share
their first prompt, and their caches start as copies of one.

Sampling follows the trainer's ``generation_config`` (completed from the model's own and
transformers' defaults, as ``generate`` completes it) through transformers' own logits
processors (temperature, top-k, top-p, min-p, repetition penalty, ...), which read each row's
ids left-padded as ``generate`` would give them, and draws with ``torch.multinomial`` as
``generate`` does. The last id a turn samples is not read until the next turn (as in
``generate``, the last id's keys and values are never computed).
"""

from __future__ import annotations

import inspect
from collections.abc import Hashable, Sequence
from typing import Any


class TurnCache:
    """Samples turns for a set of rows (keyed by any hashable), keeping their KV cache from one
    ``sample`` call to the next. ``model`` is a causal LM of transformers; ``config`` the
    ``GenerationConfig`` to sample with (``do_sample`` must be on: a rollout samples);
    ``eos`` the ids that end a turn; ``pad`` an id for the padding (never read: it is masked)."""

    def __init__(self, model: Any, config: Any, eos: Sequence[int], pad: int) -> None:
        import torch
        from transformers import DynamicCache

        if not getattr(config, "do_sample", False):
            raise ValueError(
                "TurnCache samples (do_sample=True); this generation_config decodes greedily or "
                "by beams, which the rollout's own sampler does not: pass cache_across_turns=False"
            )
        if (getattr(config, "num_beams", 1) or 1) > 1:
            raise ValueError(
                f"TurnCache samples one sequence per row, not num_beams={config.num_beams}: "
                "pass cache_across_turns=False"
            )
        self._torch = torch
        self._new_cache = DynamicCache
        self.model = model
        self.device = next(model.parameters()).device
        # As generate reads it: settings left unset take the model's, then transformers' defaults,
        # and the special tokens as the tensors its processors read (min_new_tokens, ...).
        prepare = getattr(model, "_prepare_generation_config", None)
        self.config = prepare(config)[0] if prepare is not None else config
        special = getattr(model, "_prepare_special_tokens", None)
        if special is not None:
            special(self.config, kwargs_has_attention_mask=True, device=self.device)
        for name in ("stop_strings", "max_time"):
            if getattr(self.config, name, None) is not None:
                raise ValueError(
                    f"TurnCache does not stop on {name} (generate's stopping criteria); this "
                    "generation_config sets it: pass cache_across_turns=False"
                )
        self.eos = frozenset(int(e) for e in eos)
        self.pad = int(pad)
        params = inspect.signature(model.forward).parameters
        # transformers 5 names it `cache`; 4.x `past_key_values`.
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self.keys: list[Hashable] = []
        self.cached: list[list[int]] = []  # each row's real ids in the cache, in order
        self.mask: Any = None  # [rows, columns] 1 where a column holds the row's real id
        self.cache: Any = None
        #: ids read into the cache so far (the prefill work), and ids sampled
        self.read = 0
        self.sampled = 0

    # -- the cache's rows ----------------------------------------------------------------------

    def _keep(self, keys: Sequence[Hashable]) -> None:
        """Hold the rows ``keys`` in that order: rows no longer asked for leave the batch; any
        new key starts the cache afresh (a call's rows all arrive at its first turn)."""
        fresh = self.cache is None or len(set(keys)) != len(keys)
        if fresh or any(k not in self.keys for k in keys):
            self.keys, self.cached = list(keys), [[] for _ in keys]
            self.mask = self.cache = None
            return
        where = [self.keys.index(k) for k in keys]
        if where != list(range(len(self.keys))):
            index = self._torch.tensor(where, device=self.device)
            self.cache.batch_select_indices(index)
            self.mask = self.mask[index]
            self.cached = [self.cached[i] for i in where]
            self.keys = list(keys)

    def _forward(self, ids: Any, positions: Any) -> Any:
        """Reads a block of ids into the cache; answers the logits of the block's last column."""
        kwargs = {self._cache_arg: self.cache}
        out = self.model(
            input_ids=ids,
            attention_mask=self.mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **kwargs,
        )
        return out.logits[:, -1, :].float()

    def _read(self, blocks: list[list[int]]) -> Any:
        """Appends each row's block (right-aligned) to the cache; answers the last logits."""
        torch = self._torch
        width = max(len(b) for b in blocks)
        ids = torch.full((len(blocks), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(blocks), width), dtype=torch.long)
        positions = torch.zeros((len(blocks), width), dtype=torch.long)
        for i, block in enumerate(blocks):
            start = width - len(block)
            ids[i, start:] = torch.tensor(block, dtype=torch.long)
            mask[i, start:] = 1
            first = len(self.cached[i])
            positions[i, start:] = torch.arange(first, first + len(block))
            positions[i, :start] = first
        ids, mask, positions = ids.to(self.device), mask.to(self.device), positions.to(self.device)
        self.mask = mask if self.mask is None else torch.cat([self.mask, mask], dim=1)
        self.read += sum(len(b) for b in blocks)
        return self._forward(ids, positions)

    def _read_first(self, blocks: list[list[int]]) -> Any:
        """The call's first block: each distinct block read once, its cache copied to the rows
        that share it."""
        distinct: dict[tuple[int, ...], int] = {}
        which = [distinct.setdefault(tuple(b), len(distinct)) for b in blocks]
        if len(distinct) == len(blocks):
            self.cache = self._new_cache()
            return self._read(blocks)
        self.cache = self._new_cache()
        logits = self._read([list(b) for b in distinct])
        index = self._torch.tensor(which, device=self.device)
        self.cache.batch_select_indices(index)
        self.mask = self.mask[index]
        return logits[index]

    # -- sampling ------------------------------------------------------------------------------

    def sample(
        self, keys: Sequence[Hashable], sequences: Sequence[Sequence[int]], limits: Sequence[int]
    ) -> list[list[int]]:
        """One turn per row: ``sequences`` are the rows' whole id sequences now (each the last
        turn's plus what came since), ``limits`` the most ids each may sample. Answers each
        row's sampled ids, ending at its first end-of-turn id or at its limit."""
        torch = self._torch
        if not keys:
            return []
        if not (len(keys) == len(sequences) == len(limits)):
            raise ValueError("TurnCache.sample: one sequence and one limit per key")
        if any(n < 1 for n in limits):
            raise ValueError(f"TurnCache.sample: limits must be at least 1, not {list(limits)}")
        self._keep(keys)
        blocks = []
        for i, sequence in enumerate(sequences):
            sequence = list(sequence)
            held = self.cached[i]
            if len(sequence) <= len(held) or sequence[: len(held)] != held:
                # Not an extension of what the cache holds: read the row again from its start.
                if self.mask is not None:
                    self.mask[i, :] = 0
                held = self.cached[i] = []
            blocks.append(sequence[len(held) :])
        with torch.no_grad():
            if self.cache is None:
                logits = self._read_first(blocks)
            else:
                logits = self._read(blocks)
            for i, block in enumerate(blocks):
                self.cached[i].extend(block)
            return self._decode(logits, limits)

    def _history(self) -> tuple[Any, Any]:
        """Each row's ids so far, left-padded, and their mask: what the logits processors of
        ``generate`` read (the repetition penalty skips the padding)."""
        torch = self._torch
        rows = self.cached
        width = max(len(r) for r in rows)
        out = torch.full((len(rows), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            out[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = 1
        return out.to(self.device), mask.to(self.device)

    def _decode(self, logits: Any, limits: Sequence[int]) -> list[list[int]]:
        torch = self._torch
        rows = len(limits)
        turn: list[list[int]] = [[] for _ in range(rows)]
        live = [True] * rows
        history, mask = self._history()
        processors = self.model._get_logits_processor(
            generation_config=self.config,
            input_ids_seq_length=history.shape[1],
            device=self.device,
            model_kwargs={"attention_mask": mask},
        )
        while True:
            scores = processors(history, logits)
            probs = torch.nn.functional.softmax(scores, dim=-1)
            drawn = torch.multinomial(probs, num_samples=1).squeeze(1).tolist()
            feed = []
            for i in range(rows):
                if not live[i]:
                    feed.append(self.pad)
                    continue
                turn[i].append(drawn[i])
                self.sampled += 1
                if drawn[i] in self.eos or len(turn[i]) >= limits[i]:
                    live[i] = False  # its last id is not read (as in generate)
                feed.append(drawn[i])
            if not any(live):
                return turn
            column = torch.tensor([[1 if on else 0] for on in live], dtype=torch.long)
            positions = torch.tensor(
                [[len(self.cached[i]) if live[i] else 0] for i in range(rows)], dtype=torch.long
            )
            ids = torch.tensor([[x] for x in feed], dtype=torch.long).to(self.device)
            self.mask = torch.cat([self.mask, column.to(self.device)], dim=1)
            for i in range(rows):
                if live[i]:
                    self.cached[i].append(turn[i][-1])
            history = torch.cat([history, ids], dim=1)
            logits = self._forward(ids, positions.to(self.device))
