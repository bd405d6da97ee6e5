#!/usr/bin/env python3
"""`mpirun -n 2 kforge agent` against one rank (src/dist/agent_dist.cpp, docs/distributed.md).

One batch of three candidates (a correct kernel, a wrong one that skips the last partial tile,
one that writes through a null pointer) sent by the scripted proposer:
1. two ranks answer it with the one-rank verdicts: per attempt the same candidate, disposition,
   passed and failing check (times differ, verdicts may not);
2. the feedback comes back in the batch's order (attempts 1, 2, 3; batch_index 0, 1, 2);
3. the crash is that candidate's verdict: the run exits 0 and says it ran on 2 ranks, and both
   ranks evaluated candidates (the log names the rank of each);
4. rank 0 alone wrote the store, once per candidate: three journaled attempts with three
   distinct candidate hashes, each with its own evaluation row, and SQLite's integrity check.
With KFORGE_AGENT_DIST_LONG=1 (off by default: about 20 s more):
5. a hanging kernel is second in the batch (the worker timeout is then 10 s): rank 1 gets it and
   its verdict is `timeout`, while rank 0 evaluates every other candidate meanwhile (a free rank
   takes the next candidate);
6. rank 1 killed (SIGKILL) on its first job under `mpirun -n 3 --enable-recovery`: rank 0 takes
   it for lost after KFORGE_RANK_SILENCE_S=2 and hands its candidate to another rank; the
   verdicts and the store are still the one-rank ones.
Small problem, no index_width check: each run takes a few seconds.
"""
import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "proposers")
DATA = os.path.join(HERE, "..", "data")
INSTANCE = ["--problem", "gemm", "--size", "M=40,N=24,K=16", "--threads", "1", "--no-index-width",
            "--min-time", "0.02", "--max-time", "0.2"]
LONG = bool(os.environ.get("KFORGE_AGENT_DIST_LONG"))
failures = []


EXPECTED = ["passed", *(["timeout"] if LONG else []), "incorrect", "crashed"]


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def write_script(tmp):
    """The batch: correct, (hanging,) wrong (tail rows never written), crashing."""
    hang = [{"source": os.path.join(DATA, "endless.cpp"), "grid": ["ceil_div(M,16)"], "note": "hangs"}]
    script = [
        {"source": os.path.join(EXAMPLES, "gemm", "naive.cpp"), "grid": ["ceil_div(M,BM)"], "params": {"BM": 16},
         "note": "correct"},
        *(hang if LONG else []),
        {"source": os.path.join(DATA, "tail_skip.cpp"), "grid": ["ceil_div(M,16)"], "note": "wrong"},
        {"source": os.path.join(DATA, "segfault.cpp"), "grid": ["ceil_div(M,16)"], "note": "crashes"},
    ]
    path = os.path.join(tmp, "script.json")
    with open(path, "w") as f:
        json.dump(script, f)
    return path


def agent(args, tmp, ranks, script, kill=False):
    name = f"ranks{ranks}" + ("-killed" if kill else "")
    log, db = os.path.join(tmp, name + ".jsonl"), os.path.join(tmp, name + ".db")
    n = len(EXPECTED)
    cmd = [args.kforge, "agent", *INSTANCE, "--timeout", "10" if LONG else "60", "--budget", str(n), "--parallel",
           str(n), "--proposer",
           f"python3 {os.path.join(EXAMPLES, 'scripted.py')} {script} --log {log}", "--db", db,
           "--out", os.path.join(tmp, name + "-out"), "--json"]
    env = dict(os.environ)
    if ranks > 1:
        cmd = [args.mpirun, "-n", str(ranks), "--oversubscribe", *(["--enable-recovery"] if kill else [])] + cmd
    if kill:
        env.update(KFORGE_DIST_FAULT="kill:1:1", KFORGE_RANK_SILENCE_S="2")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=env)
    check(r.returncode == 0, f"{ranks} rank(s): exit 0" + ("" if r.returncode == 0 else f" ({r.stderr[-600:]})"))
    if kill:
        check("rank 1 sent nothing" in r.stderr, "killed rank: rank 0 reports rank 1 lost")
    elif ranks > 1:  # the log names the rank of each evaluation: the batch was spread
        check("(rank 1)" in r.stderr and "(rank 0)" in r.stderr, f"{ranks} ranks: rank 0 and rank 1 each evaluated")
        if LONG:
            others = [f"attempt {a} (rank 0)" in r.stderr for a in range(1, n + 1) if a != 2]
            check("attempt 2 (rank 1): timeout" in r.stderr and all(others),
                  "the hang is rank 1's; rank 0 evaluates every other candidate meanwhile")
    summary = json.loads(r.stdout) if r.returncode == 0 else {}
    check(summary.get("ranks") == ranks, f"{ranks} rank(s): the summary says ranks = {summary.get('ranks')}")
    with open(log) as f:
        feedback = [json.loads(line) for line in f if line.strip()]
    feedback = [m for m in feedback if m.get("type") == "feedback"]
    return feedback, db


def verdicts(feedback):
    """What must not depend on where a candidate ran: no times, no paths."""
    out = []
    for f in feedback:
        failure = f.get("failure") or {}
        out.append((f["attempt"], f["candidate_hash"], f["disposition"], f.get("passed"),
                    failure.get("check") if isinstance(failure, dict) else failure))
    return out


def stored(db):
    con = sqlite3.connect(db)
    try:
        check(con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", f"{os.path.basename(db)}: integrity_check")
        rows = con.execute("SELECT attempt, candidate_hash, disposition, evaluation_id FROM agent_attempts "
                           "ORDER BY attempt").fetchall()
        evals = con.execute("SELECT COUNT(*) FROM evaluations WHERE id IN "
                            "(SELECT evaluation_id FROM agent_attempts)").fetchone()[0]
    finally:
        con.close()
    return rows, evals


def main():
    tmp = tempfile.mkdtemp(prefix="kforge-agent-dist-")
    try:
        script = write_script(tmp)
        one, one_db = agent(ARGS, tmp, 1, script)
        two, two_db = agent(ARGS, tmp, 2, script)
        ref = verdicts(one)
        check([v[2] for v in ref] == EXPECTED, f"one rank: {EXPECTED} ({[v[2] for v in ref]})")
        check(verdicts(two) == ref, f"two ranks give the one-rank verdicts\n  {verdicts(two)}\n  {ref}")
        n = len(EXPECTED)
        check([f["attempt"] for f in two] == list(range(1, n + 1)) and
              [f["batch_index"] for f in two] == list(range(n)), "two ranks answer in the batch's order")
        dbs = [one_db, two_db]
        if LONG:
            killed, killed_db = agent(ARGS, tmp, 3, script, kill=True)
            check(verdicts(killed) == ref, f"killed rank: the one-rank verdicts\n  {verdicts(killed)}\n  {ref}")
            dbs.append(killed_db)
        for db in dbs:
            rows, evals = stored(db)
            name = os.path.basename(db)
            n = len(EXPECTED)
            check([r[0] for r in rows] == list(range(1, n + 1)), f"{name}: one journaled attempt per candidate ({rows})")
            check(len({r[1] for r in rows}) == n, f"{name}: {n} distinct candidates")
            check(all(r[3] is not None for r in rows) and evals == n, f"{name}: one evaluation row each")
        for db in dbs[1:]:
            check([r[:3] for r in stored(db)[0]] == [r[:3] for r in stored(one_db)[0]],
                  f"{os.path.basename(db)} journals the one-rank attempts and verdicts")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        return 1
    print("all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--kforge", required=True)
    p.add_argument("--mpirun", required=True)
    ARGS = p.parse_args()
    sys.exit(main())
