"""Closed-loop streaming client written the way vLLM's benchmark client is
(benchmarks/backend_request_func.py): aiohttp ClientSession, iterate the
response content line by line, strip the "data: " prefix, json-decode, take a
timestamp per chunk. Users send back to back; requests still running at the end
are cancelled and recorded as cancelled. Writes spoc result.Record JSON lines.

  python3 aiohttp_client.py --url URL --users N --warmup S --duration S \
      --max-tokens N --prompt-tokens N --out FILE
"""
import asyncio
import sys
import time

import aiohttp

import records


async def user(idx, session, url, args, start_ns, warmup_ns, out):
    payload = records.body(records.prompt(args.prompt_tokens), args.max_tokens)
    due = start_ns
    turn = 0
    while True:
        rec = records.Rec(idx, turn, "py-%d-0-%d" % (idx, turn), due, due < start_ns + warmup_ns)
        out.append(rec)
        try:
            rec.sent = time.time_ns()
            async with session.post(url, json=payload, headers={"X-Request-Id": rec.rid}) as resp:
                rec.http = resp.status
                if resp.status != 200:
                    rec.status, rec.error = "http_error", "HTTP %d" % resp.status
                else:
                    async for chunk_bytes in resp.content:
                        now = time.time_ns()
                        chunk_bytes = chunk_bytes.strip()
                        if not chunk_bytes:
                            continue
                        data = chunk_bytes.decode("utf-8")
                        if data.startswith("data: "):
                            data = data[len("data: "):]
                        if data == "[DONE]":
                            break
                        if records.is_content(data):
                            rec.chunks.append(now)
        except asyncio.CancelledError:
            rec.status, rec.error, rec.done = "cancelled", "measured window ended", time.time_ns()
            raise
        except Exception as e:  # noqa: BLE001 - every failure is recorded
            rec.status, rec.error = "stream_error", repr(e)
        rec.done = time.time_ns()
        due = rec.done
        turn += 1


async def main():
    args = records.parse_args()
    url = args.url.rstrip("/") + "/v1/chat/completions"
    out = []
    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        start = time.time_ns() + 20_000_000
        warmup_ns = int(args.warmup * 1e9)
        ramp = min(args.warmup, 1.0)
        tasks = []
        for i in range(args.users):
            slot = start + int(ramp * 1e9 * i / args.users)
            tasks.append(asyncio.create_task(delayed(slot, user(i, session, url, args, slot, start + warmup_ns - slot, out))))
        await asyncio.sleep(max(0, (start + warmup_ns - time.time_ns()) / 1e9 + args.duration))
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    records.write(args.out, "aiohttp", out)


async def delayed(at_ns, coro):
    await asyncio.sleep(max(0, (at_ns - time.time_ns()) / 1e9))
    await coro


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
