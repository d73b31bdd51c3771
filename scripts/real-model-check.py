#!/usr/bin/env python3
"""Checks the records of scripts/real-model.sh's runs and prints one line per run and family.

    real-model-check.py WORK_DIR EXPECTED_EPISODES MIN_FORMAT_OK_PCT SERVER_URL

Reads WORK_DIR/{run}.jsonl (the records) and WORK_DIR/{run}.summary.jsonl (dealgym's own
summary). Fails (exit 1) when a run lost or duplicated an episode, ended one as a backend error,
a constrained run's model turns are format-ok less than MIN_FORMAT_OK_PCT % in a family (over
the completions that ended on their own: one cut at the token limit cannot be whole under any
grammar; a third or more cut fails), a constrained completion fell outside its constraint (for
a cut one: is not even the beginning of a turn of it; each such completion is printed), dealgym's summary disagrees with the
records, the logprobs run's model turns lack the logprobs llama-server returned, or a
token-exact call lacks its ids or resends its whole sequence. For the exact run it prints how
many calls' sampled ids differ from llama-server's re-tokenization of their decoded text; for
the tools run, how many model turns made tool calls and how many were read from text instead.
For the self-play runs, the prompt tokens the model evaluated against the minimum per family.
"""
import json
import sys
import urllib.request
from collections import Counter, defaultdict

# run name -> (model seats, constrained)
RUNS = {
    "constrained": (["learner"], True),
    "free": (["learner"], False),
    "selfplay": (["learner", "opponent"], True),
    "logprobs": (["learner"], True),
    "exact": (["learner", "opponent"], True),
    "tools": (["learner"], False),
    "sticky": (["learner", "opponent"], True),
    "narrated": (["learner"], False),
    "narrated_exact": (["learner"], False),
}

# Self-play runs whose prompt cost is printed: run -> whether its records must carry the
# server's cache figures (llama-server says them in every chat answer's usage; a token-exact
# call's record keeps them once the exact seat's call records them).
PROMPT_COST = {"selfplay": True, "exact": False, "sticky": True}


def post(url, body):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


def check_exact(records, server, failures):
    """Each seat's calls carry ids and logprobs; after its first call a seat is sent only the
    suffix of its new messages; count re-tokenization differences and drift."""
    calls = differ = drift = 0
    for r in records:
        for seat in ("learner", "opponent"):
            sequence = []
            for t in (t for t in r["turns"] if t["seat"] == seat):
                tokens = t.get("tokens")
                if not tokens:
                    failures.append(f"exact/{r['episode_id']}: a {seat} call has no token ids")
                    continue
                calls += 1
                if len(tokens["logprobs"]) != len(tokens["completion_ids"]):
                    failures.append(f"exact/{r['episode_id']}: logprobs do not match the sampled ids")
                if sequence and tokens["prompt_ids"][: len(sequence)] == sequence:
                    failures.append(
                        f"exact/{r['episode_id']}: a {seat} call resent its whole sequence, not a suffix"
                    )
                drift += 1 if tokens.get("drift") else 0
                sequence = sequence + tokens["prompt_ids"] + tokens["completion_ids"]
                text = post(f"{server}/detokenize", {"tokens": tokens["completion_ids"]})["content"]
                again = post(
                    f"{server}/tokenize",
                    {"content": text, "add_special": False, "parse_special": True},
                )["tokens"]
                differ += again != tokens["completion_ids"]
    print(
        f"real-model: exact run: {calls} token-exact calls, {drift} with drift from a full "
        f"re-render; {differ} of {calls} calls' sampled ids differ from a re-tokenization of "
        f"their decoded text"
    )
    if calls == 0:
        failures.append("exact: no token-exact calls")


def check_narrated(run, records, failures):
    """A narrated learner (rule:linear decides, the model narrates): every learner turn carries
    its narration and ends with its decided line; in token-exact mode every one marks where its
    forced ids begin. Prints the share of narrated turns whose Talk keeps to the move."""
    turns = [t for r in records for t in r["turns"] if t["seat"] == "learner"]
    narrated = [t for t in turns if t.get("narration")]
    if not turns or len(narrated) != len(turns):
        failures.append(f"{run}: {len(turns) - len(narrated)} of {len(turns)} learner turns are not narrated")
    ends = sum(1 for t in narrated if t["raw"].rstrip().endswith(t["narration"]["decided"]))
    if ends != len(narrated):
        failures.append(f"{run}: {len(narrated) - ends} narrated turns do not end with their decided line")
    consistent = sum(1 for t in narrated if not t["narration"].get("contradictions"))
    kinds = Counter(c["kind"] for t in narrated for c in t["narration"].get("contradictions", []))
    print(
        f"real-model: {run} run: {consistent} of {len(narrated)} narrated turns consistent "
        f"({dict(sorted(kinds.items()))}), {sum(1 for t in narrated if t['format_ok'])} format-ok"
    )
    if run == "narrated_exact":
        unmarked = 0
        for t in narrated:
            tokens = t.get("tokens") or {}
            at = tokens.get("forced_from")
            if at is None or not 0 <= at < len(tokens.get("completion_ids", [])):
                unmarked += 1
        if unmarked:
            failures.append(f"{run}: {unmarked} narrated turns do not mark their forced ids")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    work, expected, min_ok, server = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    failures = []
    for run, (seats, constrained) in RUNS.items():
        try:
            records = read_jsonl(f"{work}/{run}.jsonl")
            # Family rows only (a run over replicas adds one line per seat and replica).
            summary = {
                row["family"]: row
                for row in read_jsonl(f"{work}/{run}.summary.jsonl")
                if "family" in row
            }
        except (OSError, ValueError) as e:
            failures.append(f"{run}: cannot read its records or summary: {e}")
            continue
        ids = Counter(r["episode_id"] for r in records)
        if len(ids) != expected or any(n > 1 for n in ids.values()):
            failures.append(
                f"{run}: {len(records)} records, {len(ids)} distinct episodes, {expected} planned"
            )
        by_family = defaultdict(list)
        for r in records:
            by_family[r["family"]].append(r)
        for family, rs in sorted(by_family.items()):
            model_turns = [t for r in rs for t in r["turns"] if t["seat"] in seats]
            # A completion the token limit cut (dealgym marks its constraint check `cut` and
            # judges it as the beginning of a turn) cannot be whole under any grammar: the
            # format-ok mark is over the completions that ended on their own, and the cut ones
            # are counted apart (failing when they are a third or more: the limit is wrong).
            cut = [t for t in model_turns if (t.get("constraint") or {}).get("cut")]
            whole = [t for t in model_turns if not (t.get("constraint") or {}).get("cut")]
            ok = sum(1 for t in whole if t["format_ok"])
            pct = 100.0 * ok / len(whole) if whole else None
            violations = sum(
                1 for t in model_turns if t.get("constraint") and not t["constraint"]["admitted"]
            )
            for r in rs:
                for t in r["turns"]:
                    check = t.get("constraint") if t["seat"] in seats else None
                    if check and (check.get("cut") or not check["admitted"]):
                        finish = (t.get("call") or {}).get("finish_reason")
                        print(
                            f"real-model: {run}/{family}: {r['episode_id']} {t['seat']} attempt "
                            f"{t.get('attempt')}: finish {finish}, admitted {check['admitted']}, "
                            f"cut {bool(check.get('cut'))}: {json.dumps(t.get('raw', ''))[:400]}"
                        )
            checked = sum(1 for t in model_turns if t.get("constraint"))
            copied = sum(1 for t in model_turns if t.get("note") == "copied_instructions")
            called = sum(1 for t in model_turns if t.get("tool_calls"))
            outcomes = Counter(r["outcome"]["kind"] for r in rs)
            line = {
                "run": run,
                "family": family,
                "episodes": len(rs),
                "model_turns": len(model_turns),
                "format_ok_pct": None if pct is None else round(pct, 1),
                "cut_at_token_limit": len(cut),
                "outcomes": dict(sorted(outcomes.items())),
                "errors": outcomes.get("error", 0),
                "constrained_turns": checked,
                "constraint_violations": violations,
                "copied_instructions": copied,
                "tool_call_turns": called,
            }
            print("real-model-result " + json.dumps(line))
            if outcomes.get("error", 0):
                detail = next(r["outcome"].get("detail") for r in rs if r["outcome"]["kind"] == "error")
                failures.append(f"{run}/{family}: {outcomes['error']} episodes ended as backend errors ({detail})")
            if constrained and (pct is None or pct < min_ok):
                failures.append(f"{run}/{family}: model turns format-ok {pct}% < {min_ok}%")
            if constrained and 3 * len(cut) >= len(model_turns) > 0:
                failures.append(f"{run}/{family}: {len(cut)} of {len(model_turns)} model turns cut at the token limit")
            if constrained and checked != len(model_turns):
                failures.append(f"{run}/{family}: {len(model_turns) - checked} model turns were not checked against their constraint")
            if violations:
                failures.append(f"{run}/{family}: {violations} completions outside the grammar llama-server was sent")
            # dealgym's own summary must agree with the records.
            seat_rows = summary.get(family, {}).get("seats", {})
            for seat in seats:
                mine = [t for r in rs for t in r["turns"] if t["seat"] == seat]
                want = 100.0 * sum(t["format_ok"] for t in mine) / len(mine) if mine else None
                got = seat_rows.get(seat, {}).get("format_ok_pct")
                if (want is None) != (got is None) or (want is not None and abs(want - got) > 1e-6):
                    failures.append(f"{run}/{family}: summary says {seat} format-ok {got}%, records {want}%")
        if run == "tools":
            turns = [t for r in records for t in r["turns"] if t["seat"] == "learner"]
            called = [t for t in turns if t.get("tool_calls")]
            read = sum(1 for t in turns if t.get("action") and not t.get("tool_calls"))
            print(
                f"real-model: tools run: {len(called)} of {len(turns)} model turns made tool calls "
                f"({sum(1 for t in called if t['format_ok'])} well-formed); {read} more were read from text"
            )
            if any(r["setup"]["seats"]["learner"]["format"] != "tools" for r in records):
                failures.append("tools: a record does not say its learner acted through tools")
        if run == "exact":
            check_exact(records, server, failures)
        if run.startswith("narrated"):
            check_narrated(run, records, failures)
        if run == "logprobs":
            turns = [t for r in records for t in r["turns"] if t["seat"] == "learner"]
            missing = 0
            tokens = 0
            for t in turns:
                content = ((t.get("call") or {}).get("logprobs") or {}).get("content")
                if not isinstance(content, list) or not content or not all(
                    isinstance(c.get("logprob"), (int, float)) and c["logprob"] <= 0 for c in content
                ):
                    missing += 1
                else:
                    tokens += len(content)
            print(f"real-model: logprobs run: {len(turns) - missing} of {len(turns)} model turns carry logprobs ({tokens} tokens)")
            if missing or not turns:
                failures.append(f"logprobs: {missing} of {len(turns)} model turns lack the server's logprobs")
    check_table(work, failures)
    check_prompt_cost(work, failures)
    for f in failures:
        print(f"real-model: FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


def check_prompt_cost(work, failures):
    """Prints, per self-play run and family, the prompt tokens llama-server evaluated against
    the minimum (the tokens new since the seat's last call), as `dealgym report` computes them
    (tables/prompt_cost.csv). Fails only on a broken measurement: no table where the server
    reported its cache, a call without the figures, or figures that do not add up."""
    import csv
    import os
    for run, required in PROMPT_COST.items():
        path = os.path.join(work, f"{run}-report", "tables", "prompt_cost.csv")
        if not os.path.exists(path):
            if required:
                failures.append(f"{run}: the report has no prompt-cost table")
            else:
                print(f"real-model: {run} run: its records do not keep the server's cache figures")
            continue
        with open(path, encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            n = {k: int(row[k]) for k in ("calls", "reported_calls", "prompt_tokens", "cached_tokens",
                                           "evaluated_tokens", "minimum_tokens")}
            line = {"run": run, "group": row["group"], **n,
                    "ratio": float(row["ratio"]) if row["ratio"] else None,
                    "ratio_after_first_call": float(row["ratio_later"]) if row["ratio_later"] else None}
            print("real-model-prompt-cost " + json.dumps(line))
            if required and n["reported_calls"] != n["calls"]:
                failures.append(f"{run}/{row['group']}: {n['calls'] - n['reported_calls']} calls lack the server's cache figures")
            if n["cached_tokens"] + n["evaluated_tokens"] > n["prompt_tokens"] or n["minimum_tokens"] > n["prompt_tokens"]:
                failures.append(f"{run}/{row['group']}: the prompt-cost figures do not add up: {n}")


def check_table(work, failures):
    """The six-party table run: one record per planned episode, none a backend error, the model
    seat asked at least once in each, and the paper's metrics present."""
    import os
    path = os.path.join(work, "table.jsonl")
    if not os.path.exists(path):
        failures.append("table: no records (the run failed)")
        return
    records = read_jsonl(path)
    expected = int(os.environ.get("REAL_MODEL_TABLES", "0")) or None
    endings = Counter(r["outcome"]["kind"] for r in records)
    mine = [t for r in records for t in r["turns"] if t["role"] == "mayor"]
    ok = sum(1 for t in mine if t["parsed"].get("format_ok"))
    print(
        f"real-model: table run: {len(records)} six-party episodes, endings {dict(endings)}; "
        f"the model seat made {len(mine)} attempts, {ok} format-ok"
    )
    if expected is not None and len(records) != expected:
        failures.append(f"table: {len(records)} records, {expected} planned")
    if endings.get("error"):
        failures.append(f"table: {endings['error']} episodes ended in a backend error")
    if any(not any(t["role"] == "mayor" for t in r["turns"]) for r in records):
        failures.append("table: an episode never asked the model seat")
    if any(r.get("kind") != "table" or "deal_final" not in r["outcome"]["metrics"] for r in records):
        failures.append("table: a record is not a table record with the paper's metrics")


if __name__ == "__main__":
    sys.exit(main())
