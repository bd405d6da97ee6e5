#!/usr/bin/env python3
"""A scripted proposer for `kforge agent`: replays a fixed sequence of candidates.

Usage: kforge agent --problem gemm --proposer 'python3 scripted.py gemm/script.json' --budget 4

The script is a JSON list; each entry names a source file (relative to the script) and how to
launch it: {"source": "naive.cpp", "grid": ["ceil_div(M,16)"], "params": {...}, "note": "..."}.
It speaks the protocol of docs/agent.md: read the task, send `batch` candidates, read one
feedback per candidate, repeat while `next_batch` > 0; send `stop` when the script runs out.
Python 3 standard library only. --log FILE appends every message received, one per line.
"""
import json
import os
import sys


def main(argv):
    log_path = None
    if "--log" in argv:
        i = argv.index("--log")
        log_path = argv[i + 1]
        del argv[i:i + 2]
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    script_path = argv[0]
    base = os.path.dirname(os.path.abspath(script_path))
    with open(script_path) as f:
        script = json.load(f)
    log = open(log_path, "a") if log_path else None

    def receive():
        line = sys.stdin.readline()
        if not line:
            return None
        if log:
            log.write(line if line.endswith("\n") else line + "\n")
            log.flush()
        return json.loads(line)

    def send(message):
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    task = receive()
    if task is None or task.get("type") != "task":
        sys.stderr.write("scripted.py: expected a task first\n")
        return 2
    sys.stderr.write("scripted.py: %s at %s, batch %d\n" % (task["problem"], task["sizes"], task["batch"]))
    batch, position = task["batch"], 0
    while batch > 0:
        sent = 0
        for _ in range(batch):
            if position == len(script):
                send({"type": "stop", "reason": "the script has no more candidates"})
                break
            entry = dict(script[position])
            position += 1
            with open(os.path.join(base, entry.pop("source"))) as f:
                entry["source"] = f.read()
            entry["type"] = "candidate"
            send(entry)
            sent += 1
        next_batch = 0
        for _ in range(sent):
            feedback = receive()
            if feedback is None:
                return 0
            sys.stderr.write("scripted.py: attempt %d: %s\n" % (feedback["attempt"], feedback.get("summary", "")))
            next_batch = feedback["next_batch"]
        if sent < batch:
            break
        batch = next_batch
    receive()  # done
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
