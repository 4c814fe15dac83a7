"""Python threads that build and free objects on each other's behalf.

Producers build small dicts and lists and hand them through a queue.Queue to consumers,
which reduce them and free them: most blocks are freed by another thread than the one that
allocated them. Then waves of short-lived threads each build a private structure and exit,
so per-thread allocator state is created and torn down many times. The printed result is
sorted, so it does not depend on scheduling.
"""
import hashlib
import queue
import sys
import threading

items = int(sys.argv[1])
producers, consumers = 3, 3
tasks = queue.Queue(maxsize=1000)
results = queue.Queue()


def produce(pid):
    for i in range(items):
        payload = [f"{pid}-{i}-{j}" for j in range(i % 23)]
        tasks.put({"id": (pid, i), "payload": payload, "meta": {"len": len(payload)}})


def consume():
    local = []
    while True:
        obj = tasks.get()
        if obj is None:
            break
        size = sum(len(s) for s in obj["payload"])
        local.append((obj["id"], size, obj["meta"]["len"]))
    results.put(local)


workers = [threading.Thread(target=consume) for _ in range(consumers)]
makers = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
for t in workers + makers:
    t.start()
for t in makers:
    t.join()
for _ in workers:
    tasks.put(None)
for t in workers:
    t.join()

merged = []
while not results.empty():
    merged.extend(results.get())
merged.sort()
digest = hashlib.sha256(repr(merged).encode()).hexdigest()
print("handed over", len(merged), "bytes", sum(r[1] for r in merged), digest)

# Waves of short-lived threads, each building and dropping its own objects.
totals = [0] * 8


def short_lived(slot, wave):
    words = {str(k): [k] * (k % 7) for k in range(wave * 10, wave * 10 + 2000)}
    totals[slot] += sum(len(v) for v in words.values())


for wave in range(40):
    batch = [threading.Thread(target=short_lived, args=(s, wave)) for s in range(len(totals))]
    for t in batch:
        t.start()
    for t in batch:
        t.join()
print("short-lived threads", 40 * len(totals), "total", sum(totals))
