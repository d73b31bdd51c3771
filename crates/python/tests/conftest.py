"""Shared helpers: completions written the way a model following the turn format writes them,
and the `dealgym` binary the records are checked with."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pathlib
import socket
import subprocess
import time
import urllib.request

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
FAMILIES = ("ahp", "casino", "craigslist", "dnd", "job_interview", "bundle", "hotel")


def turn(action: str, talk: str = "Let us see.", thought: str = "Thinking.") -> str:
    """A completion in the default (tagged) turn format."""
    return f"Thought: {thought}\nTalk: {talk}\nAction: {action}"


GARBAGE = "I would rather not say anything in the format you asked for."


@pytest.fixture(scope="session")
def dealgym_bin() -> str:
    path = os.environ.get("DEALGYM_BIN")
    if not path:
        pytest.skip("DEALGYM_BIN is not set (.ci/python.sh sets it to the built CLI)")
    return path


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return REPO


@pytest.fixture(scope="session")
def replay_verify(dealgym_bin):
    """`dealgym replay FILE --verify` from the repository root (where `scenarios/` is); asserts
    it exits 0 and answers what it printed."""

    def verify(path) -> str:
        done = subprocess.run(
            [dealgym_bin, "replay", str(path), "--verify"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    return verify


def offer(state: dict, greedy: bool = True) -> str:
    """A SUBMIT_DEAL action line over the deal space in ``state["public"]``, from the mover's
    side: a price near the listing (low for a buyer, high for a seller), or most items (greedy)
    or a fair split, or each issue's first option or lowest number (greedy) or last/highest."""
    public = state["public"]
    if public.get("parts"):
        # A bundle: the price near the whole bundle's list price, every removable part in
        # (greedy) or out.
        listing = public["listing_price"]
        buyer = state["own"]["kind"] == "bundle_buyer"
        factor = (0.6 if greedy else 0.8) if buyer else (1.0 if greedy else 0.9)
        parts = [
            f"{p['key']}:{'in' if greedy else 'out'}" for p in public["parts"] if p["removable"]
        ]
        return f"[SUBMIT_DEAL] price:{listing * factor:.2f} " + " ".join(parts)
    if public.get("listing_price") is not None:
        listing = public["listing_price"]
        buyer = state["own"]["kind"] == "buyer"
        factor = (0.6 if greedy else 0.8) if buyer else (1.0 if greedy else 0.9)
        return f"[SUBMIT_DEAL] price:{listing * factor:.2f}"
    if public.get("tickets"):
        # A hotel call: every room a little below its current selling price (a deeper cut
        # when greedy), each at most the current price as the grammar requires.
        factor = 0.85 if greedy else 0.95
        prices = [f"{t['key']}:{t['selling'] * factor:.2f}" for t in public["tickets"]]
        return "[SUBMIT_DEAL] " + " ".join(prices)
    if public.get("items"):
        shares = [
            f"{i['name']}:{i['count'] if greedy else i['count'] // 2}" for i in public["items"]
        ]
        return "[SUBMIT_DEAL] " + " ".join(shares)
    terms = []
    for issue in public["issues"]:
        if issue.get("options"):
            value = issue["options"][0 if greedy else -1]
        else:
            value = issue["min"] if greedy else issue["max"]
        terms.append(f"{issue['key']}:{value}")
    return "[SUBMIT_DEAL] " + " ".join(terms)


#: A minimal ChatML chat template: the token-exact tests' tokenizer renders with it.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def anthropic_tokenizer(chat_template: str = CHATML, **special: str):
    """A real tokenizer shipped by a PyPI package: the anthropic 0.34.2 wheel's tokenizer.json
    (a 65,000-token BPE; nothing of the package is imported), as a Hugging Face tokenizer with
    `chat_template` and the ChatML markers as special tokens, plus `special` (``eos_token``,
    ``pad_token``)."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    spec = importlib.util.find_spec("anthropic")
    assert spec and spec.submodule_search_locations, "pip install --no-deps anthropic==0.34.2"
    path = pathlib.Path(spec.submodule_search_locations[0]) / "tokenizer.json"
    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_file(str(path)), chat_template=chat_template
    )
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"], **special})
    return tok


def seat_prompted_with(games, ids: list[int], render):
    """The game and role whose seat's conversation `ids` are, rendered by `render`
    (`ExactTokens.render`), with its chat messages; `None` if no seat's are (a stand-in
    sampler's check that it was asked for a real seat's next turn)."""
    for game in games:
        role = game.to_move
        if role is None:
            continue
        sequence = game.token_sequence(role) or []
        if ids[: len(sequence)] != sequence:
            continue
        messages, _ = game.prompt_messages(role)
        if render(messages, continuation=False) == ids:
            return game, role, messages
    return None


def read_records(path) -> list[dict]:
    """The records of a JSONL file, in order."""
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def mock_endpoint(dealgym_bin, repo_root, *flags: str):
    """A `dealgym mock` (the built-in OpenAI-compatible endpoint, SSE when asked to stream)
    on a free port, with `flags`, stopped on exit; gives its base URL (`.../v1`)."""
    port = free_port()
    mock = subprocess.Popen(
        [dealgym_bin, "mock", "--port", str(port), *flags],
        cwd=repo_root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                assert time.monotonic() < deadline, "the mock endpoint did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        mock.terminate()
        mock.wait(10)
