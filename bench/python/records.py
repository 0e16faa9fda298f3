"""Shared helpers: write spoc result.Record JSON lines from Python clients.

Timestamps are wall-clock nanoseconds (time.time_ns()) so that they can be
compared with the spoc test server's emission log on the same machine.
"""
import argparse
import json
import time


def rfc3339(ns):
    """Format Unix nanoseconds as RFC 3339 with nanoseconds, as Go parses it."""
    s, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%09dZ" % frac


def prompt(words):
    return " ".join("w%d" % (i % 1000) for i in range(words))


def body(prompt_text, max_tokens):
    return {
        "model": "bench",
        "messages": [{"role": "user", "content": prompt_text}],
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


class Rec:
    """One request as the client saw it."""

    __slots__ = ("user", "turn", "rid", "scheduled", "sent", "chunks", "done", "status", "error", "http", "warmup")

    def __init__(self, user, turn, rid, scheduled, warmup):
        self.user, self.turn, self.rid = user, turn, rid
        self.scheduled, self.warmup = scheduled, warmup
        self.sent = 0
        self.chunks = []  # ns timestamps of content chunks
        self.done = 0
        self.status = "ok"
        self.error = ""
        self.http = 0

    def to_json(self, run_id):
        d = {
            "run_id": run_id, "user": self.user, "session": 0, "profile": "bench", "turn": self.turn,
            "request_id": self.rid, "scheduled": rfc3339(self.scheduled), "done": rfc3339(self.done or time.time_ns()),
            "prompt_tokens_target": 0, "prompt_tokens": 0, "output_tokens": len(self.chunks),
            "status": self.status,
        }
        if self.warmup:
            d["warmup"] = True
        if self.sent:
            d["sent"] = rfc3339(self.sent)
        if self.chunks:
            d["first_token"] = rfc3339(self.chunks[0])
            d["token_gaps_us"] = [(b - a) // 1000 for a, b in zip(self.chunks, self.chunks[1:])]
        if self.error:
            d["error"] = self.error
        if self.http:
            d["http_status"] = self.http
        return json.dumps(d)


def is_content(payload):
    """True when an SSE data payload carries generated text."""
    try:
        obj = json.loads(payload)
    except ValueError:
        return False
    choices = obj.get("choices") or []
    if not choices:
        return False
    delta = choices[0].get("delta") or {}
    return bool(delta.get("content") or delta.get("reasoning_content") or choices[0].get("text"))


def write(path, run_id, recs):
    with open(path, "w") as f:
        for r in recs:
            f.write(r.to_json(run_id))
            f.write("\n")


def parse_args():
    """The command line every bench client takes (spoc bench client --external)."""
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--users", type=int, required=True)
    p.add_argument("--warmup", type=float, default=1)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--max-tokens", type=int, default=50)
    p.add_argument("--prompt-tokens", type=int, default=100)
    p.add_argument("--out", required=True)
    return p.parse_args()
