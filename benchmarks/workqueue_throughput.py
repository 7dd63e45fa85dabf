"""How many add -> get -> done cycles per second does our workqueue sustain?

Not a timed test: a measurement whose result is recorded in benchmarks/RESULTS.md.
Three shapes, each a few seconds long:

- one thread doing add, get, done in turn (the queue's own overhead);
- the same with a named queue (metrics on), to show what metrics cost;
- N producers and N workers on distinct keys (lock contention under the GIL).

The official Python client has no workqueue, so there is nothing to compare
with; client-go's own benchmark is in Go and not comparable in absolute terms.

Run: .venv/bin/python -m benchmarks.workqueue_throughput [--seconds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import threading
import time

from helpers.workqueue import Queue, RateLimitingQueue, default_controller_rate_limiter


def single_thread(queue: Queue, seconds: float) -> float:
    cycles = 0
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        for i in range(1000):
            queue.add(i)
            item, _ = queue.get()
            queue.done(item)
        cycles += 1000
    return cycles / (time.perf_counter() - started)


def producers_and_workers(queue: Queue, threads: int, items: int) -> float:
    """``threads`` producers add ``items`` distinct keys each; ``threads`` workers drain them."""
    remaining = threading.Semaphore(0)

    def produce(offset: int) -> None:
        for i in range(items):
            queue.add((offset, i))

    def work() -> None:
        while True:
            item, shutdown = queue.get()
            if shutdown:
                return
            queue.done(item)
            remaining.release()

    workers = [threading.Thread(target=work, name=f"worker-{n}") for n in range(threads)]
    producers = [threading.Thread(target=produce, args=(n,), name=f"producer-{n}")
                 for n in range(threads)]  # fmt: skip
    started = time.perf_counter()
    for thread in workers + producers:
        thread.start()
    for _ in range(threads * items):
        remaining.acquire()
    elapsed = time.perf_counter() - started
    queue.shut_down()
    for thread in workers + producers:
        thread.join()
    return threads * items / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    results = {}
    plain = Queue()
    results["single thread, unnamed queue (no metrics)"] = single_thread(plain, args.seconds)
    plain.shut_down()
    named = Queue("bench")
    results["single thread, named queue (metrics on)"] = single_thread(named, args.seconds)
    named.shut_down()
    limited = RateLimitingQueue(default_controller_rate_limiter(), "bench-rl")
    results["single thread, rate-limiting queue (metrics on)"] = single_thread(
        limited, args.seconds
    )
    limited.shut_down()
    results[f"{args.threads} producers + {args.threads} workers, unnamed queue"] = (
        producers_and_workers(Queue(), args.threads, 20_000)
    )
    if args.json:
        print(json.dumps(results))
    else:
        for shape, rate in results.items():
            print(f"{shape:55} {rate:>10,.0f} cycles/s")


if __name__ == "__main__":
    main()
