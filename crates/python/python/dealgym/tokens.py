"""Token-exact play in process, with the trainer's own tokenizer.

A policy trained on token ids must be scored on the ids it sampled, not on a re-tokenization of
their text (the two differ wherever the sampled ids are not the tokenizer's canonical split, and
wherever the chat template rewrites earlier turns). So each seat's conversation is kept as ids:
its next prompt is its previous prompt ids, plus the ids it sampled, plus the ids of the new
message(s) alone, as the trainer's chat template renders them. The rule that finds those ids is
the Rust core's (the one ``dealgym run --tokens exact`` and ``dealgym serve`` use); this module
only renders messages with the tokenizer::

    tokens = ExactTokens(tokenizer)                 # a Hugging Face tokenizer with a chat template
    game = dealgym.Game("casino", seed=7)
    role = game.to_move
    token_ids = tokens.next_prompt(game, role)      # {"prompt_ids": [...], "drift": None}
    prompt = game.token_sequence(role) + token_ids["prompt_ids"]  # what the model samples from
    ids, logprobs, text = my_sampler(prompt)
    game.step({"text": text, "completion_ids": ids, "logprobs": logprobs}, role=role)

Every call is checked against a full re-render of the conversation; where they differ, the
prompt's ``drift`` says where (``{"at", "exact_len", "rerender_len"}``), and the exact ids stay.
The record's ``turns[].tokens`` hold the same ids, so an exported row is what the model saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import _core


class ExactTokens:
    """Renders a seat's chat with ``tokenizer``'s chat template and sets the game's prompt ids.

    ``tokenizer`` is anything with Hugging Face's ``apply_chat_template`` (a
    ``PreTrainedTokenizerFast``, a processor); ``chat_template_kwargs`` (say
    ``enable_thinking=False``) go with every rendering, as a chat request's would.
    """

    def __init__(self, tokenizer: Any, **chat_template_kwargs: Any) -> None:
        if not callable(getattr(tokenizer, "apply_chat_template", None)):
            raise TypeError(
                f"ExactTokens needs a tokenizer with apply_chat_template, not {type(tokenizer).__name__}"
            )
        self.tokenizer = tokenizer
        self.chat_template_kwargs = chat_template_kwargs

    def render(self, messages: Sequence[Mapping[str, str]], *, continuation: bool) -> list[int]:
        """The ids of ``messages``: with a generation prompt, or (``continuation``) continuing
        the last, assistant, message, which then ends without its end-of-turn marker."""
        ids = self.tokenizer.apply_chat_template(
            list(messages),
            tokenize=True,
            add_generation_prompt=not continuation,
            continue_final_message=continuation,
            return_dict=False,
            **self.chat_template_kwargs,
        )
        if isinstance(ids, Mapping):  # a tokenizer that answers with a BatchEncoding anyway
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def next_prompt(self, game: _core.Game, role: str) -> dict[str, Any]:
        """Set the prompt ids of ``role``'s turn now (the role to move) and return them as an
        observation's ``token_ids``: ``{"prompt_ids": [...], "drift": None | {...}}``. The ids
        the model samples from are ``game.token_sequence(role) + prompt_ids``; the step of this
        turn carries its ``completion_ids``."""
        messages, before = game.prompt_messages(role)
        full = self.render(messages, continuation=False)
        prior = None if before is None else self.render(before, continuation=True)
        return game.set_prompt_ids(role, full, prior)

    def token_ids(self, game: _core.Game, role: str) -> dict[str, Any] | None:
        """An observation's ``token_ids`` for ``role``: ``next_prompt`` for the role to move,
        ``None`` for a role that is not (what every face shows)."""
        return self.next_prompt(game, role) if role == game.to_move else None

    def prompt(self, game: _core.Game, role: str) -> list[int]:
        """``next_prompt``, then the whole id prompt to sample from: the seat's sequence so far
        and the new ids."""
        added = self.next_prompt(game, role)["prompt_ids"]
        return (game.token_sequence(role) or []) + added


def exact_tokens(tokenizer: Any) -> ExactTokens | None:
    """What a face's ``tokenizer=`` argument means: none, a tokenizer, or an ``ExactTokens``."""
    if tokenizer is None or isinstance(tokenizer, ExactTokens):
        return tokenizer
    return ExactTokens(tokenizer)
