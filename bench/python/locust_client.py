"""Closed-loop streaming client on Locust's FastHttpUser (geventhttpclient),
run through Locust's library API so the comparison controls the windows. Each
user posts a streaming chat completion, reads the SSE lines from
response.stream, timestamps each content chunk, and sends again at once.
Writes spoc result.Record JSON lines; requests cut by the end are recorded as
cancelled.

  python3 locust_client.py --url URL --users N --warmup S --duration S \
      --max-tokens N --prompt-tokens N --out FILE
"""
import time

import gevent
from locust import FastHttpUser, constant, task
from locust.env import Environment

import records

ARGS = None
OUT = []
START_NS = 0


class StreamUser(FastHttpUser):
    wait_time = constant(0)
    connection_timeout = 60
    network_timeout = 600

    def on_start(self):
        self.idx = len(getattr(StreamUser, "_ids", []))
        StreamUser._ids = getattr(StreamUser, "_ids", []) + [self.idx]
        self.turn = 0
        self.due = time.time_ns()
        self.payload = records.body(records.prompt(ARGS.prompt_tokens), ARGS.max_tokens)

    @task
    def chat(self):
        warm = self.due < START_NS + int(ARGS.warmup * 1e9)
        rec = records.Rec(self.idx, self.turn, "locust-%d-0-%d" % (self.idx, self.turn), self.due, warm)
        OUT.append(rec)
        self.turn += 1
        rec.status, rec.error = "cancelled", "measured window ended"  # until it finishes
        try:
            rec.sent = time.time_ns()
            # No catch_response: Locust's context manager reads the whole body first.
            resp = self.client.post("/v1/chat/completions", json=self.payload, stream=True,
                                    headers={"X-Request-Id": rec.rid})
            rec.http = resp.status_code
            if resp.status_code != 200:
                rec.status, rec.error = "http_error", "HTTP %d" % resp.status_code
            else:
                stream = resp.stream
                while True:
                    line = stream.readline(b"\n")
                    now = time.time_ns()
                    if not line:
                        break
                    line = line.strip()
                    if not line.startswith(b"data: "):
                        continue
                    data = line[len(b"data: "):].decode("utf-8")
                    if data == "[DONE]":
                        break
                    if records.is_content(data):
                        rec.chunks.append(now)
                rec.status, rec.error = "ok", ""
        except gevent.GreenletExit:
            rec.done = time.time_ns()
            raise
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            rec.status, rec.error = "stream_error", repr(e)
        rec.done = time.time_ns()
        self.due = rec.done


def main():
    global ARGS, START_NS
    ARGS = records.parse_args()
    env = Environment(user_classes=[StreamUser], host=ARGS.url.rstrip("/"))
    runner = env.create_local_runner()
    START_NS = time.time_ns()
    ramp = max(min(ARGS.warmup, 1.0), 0.001)
    runner.start(ARGS.users, spawn_rate=ARGS.users / ramp)
    gevent.sleep(ARGS.warmup + ARGS.duration)
    runner.quit()
    runner.greenlet.join()
    records.write(ARGS.out, "locust", OUT)


if __name__ == "__main__":
    main()
