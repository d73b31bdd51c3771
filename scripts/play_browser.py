"""Plays one whole game on `dealgym play`'s web page in a real headless chromium, as a person would.

    play_browser.py --url http://127.0.0.1:PORT/play --width 1400 --name tester1400 \
        --family casino --opponent rule:linear --out DIR

Run by scripts/play-browser.sh, in a venv holding `websockets` (its sync client) and nothing else.
The page's contract is /work/notes/play-contract.md (issue 48); this drives only the element ids
it lists. Why a driver of its own instead of `--dump-dom`: a game is a conversation with the
server, turn by turn, and only the Chrome DevTools Protocol lets a test click, type and wait.

What a person does, this does: clicks with real mouse events at an element's centre (scrolled
into view, and only if the element is what is under the pointer there), types with
`Input.insertText` into a focused field, chooses a select's option by value and a `change` event
(headless has no native popup to click), and reads the page only through the DOM. It opens the
page, fills in the setup form (a name, a family, the opponent; scenario and role drawn), starts,
and on each of its turns picks a move from the radio buttons present — first an offer built from
the term controls, then accept as soon as it is offered, else another offer — writes a line of talk, waits for
`#preview` to show the `Action:` line the server will read, and sends; until the game is done
and `#outcome` names how it ended. Then: nothing on the page is wider than the window, the page
counted no console error (`#console-errors`), and chromium reported none (console.error, an
uncaught exception, an error in its log); a full-page screenshot is kept as `play-WIDTH.png` (or `--shot NAME`).

Exits 0 when the game was played through and every check held, 1 otherwise, with a message that
names what was awaited or what was wrong.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

# How long one wait may take before it fails, naming what it waited for. A rule opponent answers
# at once and the page polls every second, so a few seconds are plenty; a slow CI machine gets
# ample slack.
WAIT_S = 30.0
POLL_S = 0.1
# The window's height; the screenshot takes the whole page whatever this is.
HEIGHT = 900


class Failed(Exception):
    """A check did not hold or a wait ran out; the message says which."""


class Chromium:
    """One headless chromium, spoken to over the DevTools protocol on one flat websocket."""

    def __init__(self, binary: str, width: int, log_path: Path):
        self.profile = tempfile.mkdtemp(prefix="play-browser-")
        self.log = open(log_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{HEIGHT}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.ws_url = self._devtools_url()
        # Keep draining chromium's stderr into the log, so a chatty browser never blocks on a
        # full pipe.
        self.drain = threading.Thread(target=self._drain, daemon=True)
        self.drain.start()
        self.closing = contextlib.ExitStack()
        self.ws = self.closing.enter_context(connect(self.ws_url, max_size=None, open_timeout=WAIT_S))
        self.next_id = 0
        self.session: str | None = None
        self.console_errors: list[str] = []

    def _devtools_url(self) -> str:
        """The browser's websocket, read from the `DevTools listening on ws://…` line."""
        deadline = time.monotonic() + WAIT_S
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise Failed(f"chromium exited (status {self.proc.wait()}) before it listened for DevTools")
            self.log.write(line)
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                return found.group(1)
        raise Failed("chromium's 'DevTools listening on ws://…' line")

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.write(line)

    def close(self) -> None:
        try:
            self.closing.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.drain.join(timeout=10)
            self.log.close()
            shutil.rmtree(self.profile, ignore_errors=True)

    def send(self, method: str, params: dict[str, Any] | None = None, browser: bool = False) -> dict[str, Any]:
        """Sends one command (to the page's session unless `browser`) and returns its result;
        events that arrive meanwhile are noted."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if not browser:
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + WAIT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failed(f"chromium's answer to {method}")
            reply = json.loads(self.ws.recv(timeout=left))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Failed(f"{method} was refused: {reply['error']}")
                return reply.get("result", {})
            self._note(reply)

    def _note(self, event: dict[str, Any]) -> None:
        """Keeps every console error, uncaught exception and error in chromium's log."""
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.console_errors.append(f"console.error: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            self.console_errors.append(f"uncaught exception: {text}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            where = f" ({entry['url']})" if entry.get("url") else ""
            self.console_errors.append(f"log ({entry.get('source', '?')}): {entry.get('text', '')}{where}")

    def open_page(self, width: int) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, browser=True)["targetId"]
        self.session = self.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, browser=True
        )["sessionId"]
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        )
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise Failed(f"evaluating {expression[:80]!r} threw: {details.get('exception', {}).get('description', details)}")
        return result["result"].get("value")

    def wait_for(self, what: str, expression: str, timeout: float = WAIT_S) -> Any:
        """Polls until `expression` is truthy and returns its value; fails naming `what`."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise Failed(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(POLL_S)


TRACE = False


def trace(what: str) -> None:
    """Says what the person just did, under --trace."""
    if TRACE:
        print(f"  {time.time() % 1000:.2f} {what}", file=sys.stderr, flush=True)


def js(value: Any) -> str:
    """A Python value as a JavaScript literal."""
    return json.dumps(value)


class Person:
    """What a person does on the page: click, type, choose."""

    def __init__(self, browser: Chromium):
        self.b = browser

    def click(self, selector: str) -> None:
        """A real left click at the element's centre, after scrolling it into view; fails if
        something else (an overlay, a hidden control) is what the pointer would hit."""
        where = self.b.evaluate(
            f"""(() => {{
              const el = document.querySelector({js(selector)});
              if (!el) return {{missing: true}};
              el.scrollIntoView({{block: 'center', inline: 'center'}});
              const r = el.getBoundingClientRect();
              if (r.width === 0 || r.height === 0) return {{hidden: true}};
              const x = r.left + r.width / 2, y = r.top + r.height / 2;
              const hit = document.elementFromPoint(x, y);
              const labels = Array.from(el.labels || []);
              const mine = hit && (hit === el || el.contains(hit) || labels.some(l => l.contains(hit)));
              return {{x, y, mine, hit: hit ? hit.outerHTML.slice(0, 120) : null}};
            }})()"""
        )
        if where.get("missing"):
            raise Failed(f"no element {selector} to click")
        if where.get("hidden"):
            raise Failed(f"{selector} is not shown, so a person cannot click it")
        if not where["mine"]:
            raise Failed(f"clicking {selector} would hit another element: {where['hit']}")
        x, y = where["x"], where["y"]
        trace(f"click {selector} at ({x:.0f}, {y:.0f})")
        self.b.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        for kind in ("mousePressed", "mouseReleased"):
            self.b.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1},
            )

    def type_into(self, selector: str, text: str) -> None:
        """Clicks into a field, selects what is there and types `text` over it."""
        self.click(selector)
        if not self.b.evaluate(f"document.activeElement === document.querySelector({js(selector)})"):
            raise Failed(f"clicking {selector} did not focus it")
        self.b.send(
            "Input.dispatchKeyEvent",
            {"type": "rawKeyDown", "key": "a", "code": "KeyA", "windowsVirtualKeyCode": 65,
             "modifiers": 2, "commands": ["selectAll"]},
        )
        self.b.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": "a", "code": "KeyA", "modifiers": 2})
        self.b.send("Input.insertText", {"text": text})
        trace(f"typed {text!r} into {selector}")
        value = self.b.evaluate(f"document.querySelector({js(selector)}).value")
        if value != text:
            raise Failed(f"typed {text!r} into {selector} but it holds {value!r}")

    def choose(self, selector: str, value: str) -> None:
        """Chooses a select's option by value, as the popup would: the value, then `input` and
        `change` events."""
        ok = self.b.evaluate(
            f"""(() => {{
              const el = document.querySelector({js(selector)});
              if (!el) return 'missing';
              if (!Array.from(el.options).some(o => o.value === {js(value)})) return 'no option';
              el.scrollIntoView({{block: 'center'}});
              el.focus();
              el.value = {js(value)};
              el.dispatchEvent(new Event('input', {{bubbles: true}}));
              el.dispatchEvent(new Event('change', {{bubbles: true}}));
              return 'ok';
            }})()"""
        )
        if ok == "missing":
            raise Failed(f"no select {selector}")
        if ok == "no option":
            options = self.b.evaluate(f"Array.from(document.querySelector({js(selector)}).options).map(o => o.value)")
            raise Failed(f"{selector} has no option {value!r} (it has {options})")
        trace(f"chose {value!r} in {selector}")


def shown(selector: str) -> str:
    """A JavaScript test that the element is there and laid out (not hidden)."""
    return f"(() => {{ const el = document.querySelector({js(selector)}); return !!el && el.getClientRects().length > 0; }})()"


def turn() -> str:
    """A JavaScript expression: #game's data-turn (yours, theirs, done), or '' before a game."""
    return "((document.querySelector('#game') || {dataset: {}}).dataset.turn || '')"


def term_value(term: dict[str, Any], facts: str) -> str:
    """What a person who wants a good deal asks for in one term: most of each item, a price
    from the facts they were told, the middle of a number's range, the first option."""
    kind, low, high = term["type"], term.get("min"), term.get("max")
    step = term.get("step") or 1
    if kind == "select":
        return term["options"][0]
    if kind == "count" or (high is not None and low is not None and kind != "price"):
        low = low or 0
        if high is None:
            return str(low)
        return str(max(low, min(high, math.ceil(high * 2 / 3))))
    if low is not None and high is not None:
        value = (low + high) / 2
    else:
        # A price without bounds: what the facts say this side would pay (a buyer's budget or
        # target), else the listing price, else the largest amount they mention, else a round
        # number.
        amounts = [float(a) for a in re.findall(r"\d+(?:\.\d+)?", facts.replace(",", ""))]
        value = next(
            (
                float(found.group(1))
                for label in (r"budget|target|willing|pay", r"list")
                if (found := re.search(rf"(?:{label})[^\d]{{0,60}}?(\d+(?:\.\d+)?)", facts.replace(",", ""), re.I))
            ),
            max(amounts) if amounts else 100.0,
        )
        if low is not None:
            value = max(value, low)
        if high is not None:
            value = min(value, high)
    value = round(value / step) * step
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def play_turn(b: Chromium, person: Person, number: int) -> str:
    """One of the person's turns: a move from the radios present, its terms, talk, and send.
    Returns the move's kind."""
    moves = b.evaluate("Array.from(document.querySelectorAll('#moves input[name=move]')).map(i => i.value)")
    if not moves:
        raise Failed("it is the person's turn but #moves holds no radio input[name=move]")
    if b.evaluate("!!document.querySelector('#send') && !document.querySelector('#send').disabled") and not b.evaluate(
        "!!document.querySelector('#moves input[name=move]:checked')"
    ):
        raise Failed("#send is enabled before a move is chosen")
    # The person's first move is an offer when one may be made, so the term controls are played
    # whoever moves first; after it, accepting as soon as it may ends the game soon.
    order = ("submit", "accept") if number == 1 else ("accept", "submit")
    kind = next((k for k in (*order, "talk", "reject", "walk_away") if k in moves), moves[0])
    person.click(f"#moves input[name=move][value={kind}]")
    if not b.evaluate(f"document.querySelector('#moves input[name=move][value={kind}]').checked"):
        raise Failed(f"clicking the {kind} radio did not check it")
    if kind == "accept" and b.evaluate(shown("#offer")):
        first = b.evaluate("(document.querySelector('#offer').options[0] || {}).value")
        if first is not None:
            person.choose("#offer", first)
    if kind == "submit":
        facts = b.evaluate("(document.querySelector('#facts') || {}).innerText || ''")
        terms = b.evaluate(
            """Array.from(document.querySelectorAll('#terms [data-term]')).map(el => ({
                 key: el.dataset.term, tag: el.tagName.toLowerCase(),
                 type: el.tagName === 'SELECT' ? 'select' : (el.dataset.type || el.type),
                 min: el.min === '' || el.min === undefined ? null : Number(el.min),
                 max: el.max === '' || el.max === undefined ? null : Number(el.max),
                 step: el.step === '' || el.step === 'any' || el.step === undefined ? null : Number(el.step),
                 label: (el.labels && el.labels[0] ? el.labels[0].innerText : ''),
                 options: el.tagName === 'SELECT' ? Array.from(el.options).map(o => o.value) : []}))"""
        )
        if not terms:
            raise Failed("the submit move is chosen but #terms holds no control with data-term")
        for term in terms:
            if term["type"] != "select" and "price" in (term["key"] + term["label"]).lower():
                term["type"] = "price"
            elif term["type"] == "number" and term["min"] is not None and term["max"] is not None and (
                "share" in term["label"].lower() or "of " in term["label"].lower()
            ):
                term["type"] = "count"
            value = term_value(term, facts)
            selector = f"#terms [data-term={js(term['key'])}]"
            if term["tag"] == "select":
                person.choose(selector, value)
            else:
                person.type_into(selector, value)
    talk = {
        "accept": "That works for me; I accept.",
        "submit": "Here is what I would like; I think it is fair to both of us.",
    }.get(kind, "Let us keep talking.")
    talk = f"{talk} (turn {number})"
    person.type_into("#talk", talk)
    # The line of this turn, not a stale one: it carries the talk just typed.
    b.wait_for(
        "#preview to show this turn's completion with its `Action:` line",
        f"""(() => {{
          const text = (document.querySelector('#preview') || {{}}).textContent || '';
          return /^Action:/m.test(text) && text.includes({js(talk)});
        }})()""",
    )
    if b.evaluate("document.querySelector('#send').disabled"):
        raise Failed(f"#send is disabled on the person's turn with the {kind} move chosen")
    before = b.evaluate("document.querySelectorAll('#transcript .msg').length")
    person.click("#send")
    b.wait_for(
        f"the {kind} move to be played (the transcript to grow past {before} messages or the game to end)",
        f"""(() => {{
          const err = (document.querySelector('#error') || {{}}).textContent || '';
          if (err.trim()) return 'error';
          return document.querySelectorAll('#transcript .msg').length > {before} || {turn()} === 'done';
        }})()""",
    )
    error = b.evaluate("((document.querySelector('#error') || {}).textContent || '').trim()")
    if error and b.evaluate(shown("#error")):
        raise Failed(f"after sending {kind}, #error shows: {error}")
    return kind


def wide_elements(b: Chromium) -> list[str]:
    """Elements whose right edge lies past the window, not counting those an element inside the
    window clips (a scrolling <pre>'s long line is inside its box, not wider than the window)."""
    return b.evaluate(
        """(() => {
          const w = window.innerWidth, out = [];
          if (document.documentElement.scrollWidth > w)
            out.push(`the document scrolls sideways: scrollWidth ${document.documentElement.scrollWidth} > ${w}`);
          const clipped = el => {
            for (let p = el.parentElement; p; p = p.parentElement) {
              const o = getComputedStyle(p).overflowX;
              if (o !== 'visible' && p.getBoundingClientRect().right <= w + 1) return true;
            }
            return false;
          };
          for (const el of document.querySelectorAll('body *')) {
            const r = el.getBoundingClientRect();
            if (r.width === 0 && r.height === 0) continue;
            if (r.right > w + 1 && !clipped(el)) {
              const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
                (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
              out.push(`${name}: right edge ${Math.round(r.right)} > ${w}`);
            }
          }
          return out;
        })()"""
    )


def screenshot(b: Chromium, path: Path) -> None:
    """The whole page, not just the window."""
    metrics = b.send("Page.getLayoutMetrics")
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = b.send(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        },
    )
    path.write_bytes(base64.b64decode(shot["data"]))


def play(args: argparse.Namespace) -> list[str]:
    """Plays the game and returns the failed checks' messages (empty when all held)."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob(f"play-{args.width}*"):
        stale.unlink()
    b = Chromium(args.chromium, args.width, out / f"chromium-{args.width}.log")
    person = Person(b)
    problems: list[str] = []
    try:
        b.open_page(args.width)
        b.send("Page.navigate", {"url": args.url})
        b.wait_for("the setup form #setup", shown("#setup"))
        b.wait_for(
            f"#family to offer {args.family}",
            f"Array.from((document.querySelector('#family') || {{options: []}}).options).some(o => o.value === {js(args.family)})",
        )
        person.type_into("#name", args.name)
        person.choose("#family", args.family)
        b.wait_for(
            f"#opponent to offer {args.opponent}",
            f"Array.from((document.querySelector('#opponent') || {{options: []}}).options).some(o => o.value === {js(args.opponent)})",
        )
        person.choose("#opponent", args.opponent)
        for select in ("#scenario", "#role"):
            if b.evaluate(shown(select)) and b.evaluate(
                f"Array.from(document.querySelector({js(select)}).options).some(o => o.value === '')"
            ):
                person.choose(select, "")
        person.click("#start")
        b.wait_for("the game #game to start", f"{shown('#game')} && ['yours', 'theirs', 'done'].includes({turn()})")

        played: list[str] = []
        while True:
            state = b.wait_for(
                "#game[data-turn=yours] or [data-turn=done] (the opponent to move)",
                f"['yours', 'done'].includes({turn()}) && {turn()}",
            )
            if state == "done":
                break
            if len(played) >= args.max_turns:
                raise Failed(f"the game did not end within {args.max_turns} of the person's turns")
            played.append(play_turn(b, person, len(played) + 1))
        kind = b.wait_for("#outcome[data-kind] to be set", "(document.querySelector('#outcome') || {dataset: {}}).dataset.kind || ''")
        outcome = b.evaluate("(document.querySelector('#outcome').innerText || '').trim().replace(/\\s+/g, ' ')")
        print(f"{args.width} px: {args.family} against {args.opponent}: {len(played)} turns "
              f"({', '.join(played) or 'none'}), outcome {kind}: {outcome}")

        time.sleep(0.5)  # let the last render and any late error land
        wide = wide_elements(b)
        if wide:
            problems.append(f"{args.width} px: wider than the window: " + "; ".join(wide[:10]))
        screenshot(b, out / f"{args.shot}.png")
        count = b.evaluate("(document.querySelector('#console-errors') || {dataset: {}}).dataset.count")
        if count != "0":
            shown_errors = b.evaluate("(document.querySelector('#console-errors') || {}).textContent || ''")
            problems.append(f"{args.width} px: #console-errors data-count is {count!r}, not \"0\": {shown_errors.strip()}")
        b.evaluate("0")  # collect any events still in flight
    except Failed as failure:
        problems.append(f"{args.width} px: {failure}")
        try:
            screenshot(b, out / f"{args.shot}-failed.png")
            (out / f"{args.shot}-failed.html").write_text(
                b.evaluate("document.documentElement.outerHTML") or "", encoding="utf-8"
            )
        except Exception:  # the failure's own message matters more than its evidence
            pass
    finally:
        if b.console_errors:
            problems.append(f"{args.width} px: {len(b.console_errors)} console error(s):\n  " + "\n  ".join(b.console_errors))
        b.close()
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the play page, e.g. http://127.0.0.1:8100/play")
    parser.add_argument("--width", type=int, required=True, help="the window's width in CSS px")
    parser.add_argument("--name", required=True, help="the person's name (the record's human:NAME)")
    parser.add_argument("--family", required=True, help="the family to choose in #family")
    parser.add_argument("--opponent", default="rule:linear", help="the opponent spec to choose in #opponent")
    parser.add_argument("--out", required=True, help="where the screenshot and chromium's log go")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--max-turns", type=int, default=40, help="the person's turns before giving up")
    parser.add_argument("--trace", action="store_true", help="say each click, keystroke and choice")
    parser.add_argument("--shot", help="the screenshot's name, without .png (default: play-WIDTH)")
    args = parser.parse_args()
    args.shot = args.shot or f"play-{args.width}"
    # A `timeout` that stops this driver stops its chromium too (the `finally` runs).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(f"FAIL: {args.width} px: the driver was stopped (SIGTERM)"))
    global TRACE
    TRACE = args.trace
    problems = play(args)
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"ok: {args.width} px: played through, nothing wider than the window, no console error; "
              f"screenshot {Path(args.out) / f'{args.shot}.png'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
