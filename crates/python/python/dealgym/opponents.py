"""Opponents a single-seat environment plays inside: a scripted list of completions, any Python
callable, or a model behind an OpenAI-compatible endpoint. Each answers the chat messages and the
structured state of its seat with a raw completion."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Sequence

#: What an opponent is asked: the seat's chat messages and structured state.
Opponent = Callable[[list[dict[str, str]], dict[str, Any]], str]


class Script:
    """Completions played in order, one per turn of the opponent; an episode that asks for more
    than the script holds is an error naming how many it holds."""

    def __init__(self, completions: Sequence[str]) -> None:
        if not completions or not all(isinstance(c, str) for c in completions):
            raise TypeError("a script is a non-empty list of completion strings")
        self.completions = list(completions)
        self._next = 0

    def restart(self) -> None:
        self._next = 0

    def __call__(self, messages: list[dict[str, str]], state: dict[str, Any]) -> str:
        if self._next >= len(self.completions):
            raise RuntimeError(
                f"the opponent's script holds {len(self.completions)} completions and the "
                "episode asks for another"
            )
        self._next += 1
        return self.completions[self._next - 1]


class OpenAIChat:
    """A model behind an OpenAI-compatible chat endpoint (vLLM, llama.cpp's server, a hosted
    API, ``dealgym mock``): the seat's messages are sent as they are, and the reply's content is
    the completion. Each call has a timeout and is retried with backoff on a connection error or
    a 5xx/429 answer."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        **sampling: Any,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.sampling = sampling

    def __call__(
        self,
        messages: list[dict[str, str]],
        state: dict[str, Any],
        *,
        stop: list[str] | None = None,
    ) -> str:
        """The reply's content; with ``stop``, the endpoint is sent those stop strings too
        (beside any given as sampling), as a narrated seat sends its action labels."""
        sampling = dict(self.sampling)
        if stop:
            given = sampling.get("stop") or []
            sampling["stop"] = [*([given] if isinstance(given, str) else given), *stop]
        body = json.dumps({"model": self.model, "messages": messages, **sampling}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                    reply = json.load(answer)
                return reply["choices"][0]["message"].get("content") or ""
            except urllib.error.HTTPError as e:
                if attempt == self.retries or not (e.code == 429 or e.code >= 500):
                    raise RuntimeError(f"{self.url} answered {e.code}") from e
            except (urllib.error.URLError, TimeoutError) as e:
                if attempt == self.retries:
                    raise RuntimeError(f"{self.url} could not be reached: {e}") from e
            except (KeyError, IndexError, ValueError) as e:
                raise RuntimeError(f"{self.url} answered no chat completion: {e}") from e
            time.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")


def opponent_of(spec: Any) -> Opponent:
    """An opponent from what a user passes: a callable as is, a list of completions as a
    script."""
    if isinstance(spec, (list, tuple)):
        return Script(spec)
    if callable(spec):
        return spec
    raise TypeError(
        "an opponent is a callable (messages, state) -> completion, a list of completions, or "
        f"OpenAIChat(base_url, model); not {type(spec).__name__}"
    )
