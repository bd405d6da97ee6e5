#!/usr/bin/env python3
"""`kforge mcp` driven by the official MCP Python SDK (pip package `mcp`) as the client, plus a
raw stdio check for what the SDK never sends (a line that is not JSON, a batch, a bad version).

Usage: mcp_client_test.py --kforge build/kforge --root SOURCE_DIR

What it asserts, in order, on one server:
  - initialize (the SDK's handshake) and the seven tools in tools/list, each with an object
    inputSchema;
  - describe_problem gemm: the cpp ABI, the tolerance formula, the baseline, library kernels;
  - evaluate examples/naive_gemm.cpp with bench: passed, thorough checks, timed with speedup
    and SOL; tests/verify/wrong/ignores_beta.cpp: incorrect,
    failed check `bound`, with the first bad element; tests/data/segfault.cpp: crashed, and
    the server answers a ping and a list_problems after it; bench of gemm.cpu passes; ceilings
    answers for cpu;
  - an unknown tool: a JSON-RPC error -32602 (protocol level, as the specification says);
    a bad argument: a result with isError naming the argument;
  - tune with a progressToken: at least one notifications/progress; a describe_problem made
    meanwhile is answered while the tune runs; then the SDK cancels the call
    (notifications/cancelled); another call is answered while the tune winds down, the
    server's log says the tune stopped after the cancellation, and history shows the tuning
    run with fewer evaluations than its budget.
And on a second server, at the raw stdio level: garbage -> -32700 (id null) and the server
still answers; a batch, a wrong jsonrpc version, an unknown method, tools/call without a name
-> -32600/-32601/-32602; end of input -> the server exits 0.
The SDK's high-level mcp.Client (auto mode: a server/discover probe, then initialize) connects.
And on another server, 300 seeded random messages at once (tool calls with arguments of every wrong
type, cut-off lines, cancellations of random ids): exit 0, every request answered unless
cancelled.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

try:
    import anyio
    import mcp
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError
except ImportError as e:  # CI must install it (tools/install-deps); never a silent skip
    print(f"FAIL: the MCP Python SDK is not installed ({e}); run tools/install-deps "
          "or `python3 -m pip install mcp`", file=sys.stderr)
    sys.exit(1)

TOOLS = {"list_problems", "describe_problem", "evaluate", "bench", "tune", "history", "ceilings"}
SMALL = {"M": 64, "N": 64, "K": 64}


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok   {what}", flush=True)


def read(root, rel):
    with open(os.path.join(root, rel)) as f:
        return f.read()


async def evaluate(session, root, rel, grid, **extra):
    r = await session.call_tool("evaluate", {"problem": "gemm", "lang": "cpp", "source": read(root, rel),
                                             "grid": grid, "sizes": SMALL, **extra})
    check(not r.is_error, f"evaluate {rel}: a result, not a tool error")
    return r.structured_content


async def sdk_part(args, db, errlog_path):
    env = dict(os.environ)
    env.setdefault("OPENBLAS_THREAD_TIMEOUT", "1")
    params = StdioServerParameters(command=args.kforge, args=["mcp", "--db", db], env=env)
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                init = await session.initialize()
                check(init.server_info.name == "kforge", f"initialize: server kforge, protocol {init.protocol_version}")
                listed = await session.list_tools()
                names = {t.name for t in listed.tools}
                check(names == TOOLS, f"tools/list has the seven tools: {sorted(names)}")
                check(all(t.input_schema.get("type") == "object" for t in listed.tools), "every inputSchema is an object")

                d = await session.call_tool("describe_problem", {"problem": "gemm", "sizes": SMALL})
                s = d.structured_content
                check(not d.is_error and "float alpha" in s["abi"]["cpp"], f"describe gemm: cpp ABI {s['abi']['cpp']}")
                check("gamma_n" in s["tolerance"]["formula"] and s["tolerance"]["reduction_length"] > 0,
                      "describe gemm: the error-bound formula and its numbers")
                check(s["baseline"] and len(s["kernels"]) > 0 and "params" in s["kernels"][0],
                      f"describe gemm: baseline {s['baseline']}, {len(s['kernels'])} library kernels with spaces")
                check(d.content[0].type == "text" and "gemm" in d.content[0].text, "describe gemm: a text content too")

                t0 = time.monotonic()
                ok = await evaluate(session, args.root, "examples/naive_gemm.cpp", "ceil_div(M,16)",
                                    bench=True, measure={"repetitions": 5})
                check(ok["disposition"] == "passed" and ok["feedback"]["passed"],
                      f"naive_gemm passes ({time.monotonic() - t0:.1f} s): {ok['summary']}")
                check(ok["result"]["verify"]["passed"] and len(ok["result"]["verify"]["checks"]) >= 8,
                      "naive_gemm: the full result JSON is there, with the thorough protocol's checks")
                check(ok["feedback"]["timing"]["repetitions"] == 5 and ok["feedback"]["speedup"] > 0
                      and 0 < ok["feedback"]["sol"]["fraction"],
                      "naive_gemm timed: median, speedup over the baseline, SOL fraction")

                wrong = await evaluate(session, args.root, "tests/verify/wrong/ignores_beta.cpp", "ceil_div(M,16)")
                failure = wrong["feedback"].get("failure", {})
                check(wrong["disposition"] == "incorrect" and failure.get("check") == "bound",
                      f"ignores_beta is rejected by `bound`: {wrong['summary']}")
                check("first_bad" in failure and failure.get("replay", "").startswith("kforge eval"),
                      "ignores_beta: first bad element and a replay line")

                crash = await evaluate(session, args.root, "tests/data/segfault.cpp", "1")
                check(crash["disposition"] == "crashed", f"segfault.cpp crashed, contained: {crash['summary']}")
                await session.send_ping()
                lp = await session.call_tool("list_problems", {})
                check(any(p["name"] == "gemm" for p in lp.structured_content["problems"]),
                      "after the crash the server answers ping and list_problems")

                b = await session.call_tool("bench", {"problem": "gemm", "sizes": SMALL, "measure": {"repetitions": 5}})
                check(not b.is_error and b.structured_content["disposition"] == "passed"
                      and b.structured_content["result"]["kernel"] == "gemm.cpu",
                      f"bench gemm.cpu: {b.structured_content['summary']}")
                ce = await session.call_tool("ceilings", {"backend": "cpu"})
                entry = ce.structured_content["backends"][0]
                check(not ce.is_error and entry["backend"] == "cpu" and ("ceilings" in entry or entry["cached"] is False),
                      "ceilings cpu: the cached roofs, or says none is cached")

                try:
                    await session.call_tool("no_such_tool", {})
                    check(False, "an unknown tool is an error")
                except MCPError as e:
                    check(e.code == -32602 and "no_such_tool" in e.message, f"unknown tool: error {e.code} {e.message}")
                bad = await session.call_tool("describe_problem", {"problem": "gemm", "sizes": {"M": "big"}})
                check(bad.is_error and "sizes.M" in bad.content[0].text, f"bad argument: isError, {bad.content[0].text[:80]}")
                nope = await session.call_tool("describe_problem", {"problem": "no_such_problem"})
                check(nope.is_error and "no_such_problem" in nope.content[0].text, "unknown problem: isError")

                # A long tune, cancelled after its first progress notification.
                budget = 200
                progress = []
                first = anyio.Event()

                async def on_progress(value, total, message):
                    progress.append((value, total, message))
                    first.set()

                scope = anyio.CancelScope()
                finished = {}

                async def run_tune():
                    with scope:
                        finished["result"] = await session.call_tool(
                            "tune", {"problem": "gemm", "sizes": SMALL, "strategy": "random", "budget": budget,
                                     "measure": {"repetitions": 3}}, progress_callback=on_progress)

                t0 = time.monotonic()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_tune)
                    with anyio.fail_after(120):
                        await first.wait()
                    check(len(progress) >= 1, f"tune: progress after {time.monotonic() - t0:.1f} s: {progress[0][2]}")
                    during = await session.call_tool("describe_problem", {"problem": "gemm"})
                    check(not during.is_error and "result" not in finished,
                          "a call made while the tune runs is answered before the tune ends")
                    scope.cancel()  # the SDK sends notifications/cancelled for the request
                check("result" not in finished, "tune: cancelled before it finished")
                pong = await session.call_tool("list_problems", {})
                check(not pong.is_error, "a call after the cancellation is answered")
                stopped = False
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not stopped:
                    with open(errlog_path) as f:
                        stopped = any(line.startswith("kforge mcp: tune (request") and "stopped after cancellation" in line
                                      for line in f)
                    if not stopped:
                        await anyio.sleep(0.2)
                check(stopped, f"the server stopped the tune ({time.monotonic() - t0:.1f} s after it began)")
                h = await session.call_tool("history", {"limit": 50})
                runs = [r for r in h.structured_content["runs"] if r["command"].startswith("kforge mcp tune")]
                check(runs and 1 <= runs[0]["evaluations"] < budget,
                      f"history: the cancelled tune recorded {runs[0]['evaluations'] if runs else 0} of {budget} evaluations")
                evals = [e for e in h.structured_content["evaluations"] if e["kernel"] == "candidate"]
                check(len(evals) >= 3 and any(e["kernel"] == "gemm.cpu" for e in h.structured_content["evaluations"]),
                      "history: the evaluate and bench calls were recorded")
                await session.send_ping()


async def auto_part(args):
    """The SDK's high-level Client in its default mode probes server/discover (a newer protocol
    era) first; the server answers -32601 and the Client falls back to initialize."""
    params = StdioServerParameters(command=args.kforge, args=["mcp", "--no-db", "-q"])
    async with mcp.Client(params) as client:
        listed = await client.list_tools()
        check(len(listed.tools) == 7, f"mcp.Client (auto mode) connects, protocol {client.protocol_version}")
        r = await client.call_tool("list_problems", {})
        check(not r.is_error, "mcp.Client: a tool call")


def raw_part(args, db):
    env = dict(os.environ)
    p = subprocess.Popen([args.kforge, "mcp", "--db", db, "--quiet"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)

    def send(text):
        p.stdin.write(text + "\n")
        p.stdin.flush()

    def answer():
        line = p.stdout.readline()
        check(line, "the server answered (is still up)")
        return json.loads(line)

    send("this is not json {")
    r = answer()
    check(r["error"]["code"] == -32700 and r["id"] is None, f"garbage: -32700 with id null ({r['error']['message'][:50]})")
    send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "raw", "version": "0"}}}))
    r = answer()
    check(r["id"] == 1 and r["result"]["protocolVersion"] == "2025-06-18", "after garbage, initialize works (2025-06-18)")
    send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    send("[1, 2]")
    check(answer()["error"]["code"] == -32600, "a batch: -32600")
    send(json.dumps({"jsonrpc": "1.0", "id": 2, "method": "ping"}))
    r = answer()
    check(r["error"]["code"] == -32600 and r["id"] == 2, "jsonrpc 1.0: -32600, id kept")
    send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}))
    check(answer()["error"]["code"] == -32601, "an unknown method: -32601")
    send(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"arguments": {}}}))
    check(answer()["error"]["code"] == -32602, "tools/call without a name: -32602")
    send('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "list_problems", "argu')
    check(answer()["error"]["code"] == -32700, "a cut-off line: -32700")
    send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "list_problems"}}))
    r = answer()
    check(r["id"] == 6 and not r["result"]["isError"] and r["result"]["structuredContent"]["problems"],
          "then a tool call works")
    send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
    check(answer() == {"jsonrpc": "2.0", "id": 7, "result": {}}, "ping: an empty result")
    p.stdin.close()
    check(p.wait(timeout=30) == 0, "end of input: the server exits 0")


def fuzz_part(args, seed=19, count=300):
    """Tool calls with arguments of every wrong type, cut-off lines and cancellations of random
    ids, all at once: the server must answer every request that was not cancelled and exit 0."""
    rng = random.Random(seed)
    junk = [None, True, 0, -1, 1.5, 1e30, "", "x", "gemm", [], [1], {}, {"M": "a"}, {"M": -5}, {"a": {}},
            "ceil_div(M,", 2 ** 70]
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "clientInfo": {"name": "fuzz", "version": "0"}}}
    listed = subprocess.run([args.kforge, "mcp", "--no-db", "-q"], capture_output=True, text=True, timeout=60,
                            input=json.dumps(init) + "\n" + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}) + "\n")
    tools = json.loads(listed.stdout.splitlines()[1])["result"]["tools"]
    lines, sent, cancelled = [json.dumps(init)], {0}, set()
    for i in range(count):
        t = rng.choice(tools)
        names = list(t["inputSchema"]["properties"]) + ["junk"]
        a = {"problem": "gemm", "sizes": {"M": 8, "N": 8, "K": 8}, "quick": True, "budget": 2, "source": "int x;"} \
            if rng.random() < 0.5 else {}
        for _ in range(rng.randint(0, 3)):
            a[rng.choice(names)] = rng.choice(junk)
        r = rng.random()
        if r < 0.8:
            m = {"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call", "params": {"name": t["name"], "arguments": a}}
            if rng.random() < 0.2:
                m["params"]["_meta"] = {"progressToken": rng.choice(junk)}
            lines.append(json.dumps(m))
            sent.add(1000 + i)
        elif r < 0.9:
            target = rng.choice(junk + [1000 + i - 1])
            lines.append(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                     "params": {"requestId": target, "reason": rng.choice(junk)}}))
            if isinstance(target, int):
                cancelled.add(target)
        else:
            text = json.dumps({"jsonrpc": "2.0", "id": 1000 + i, "method": rng.choice(["ping", "tools/list", "x"])})
            lines.append(text[:rng.randint(1, len(text))])
    p = subprocess.run([args.kforge, "mcp", "--no-db", "-q", "--timeout", "30"], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"fuzz: {len(lines)} messages, the server exits 0")
    out = [json.loads(line) for line in p.stdout.splitlines()]
    check(all(o.get("jsonrpc") == "2.0" and ("result" in o or "error" in o or "method" in o) for o in out),
          "fuzz: every line out is a JSON-RPC message")
    missing = sent - {o["id"] for o in out if "id" in o}
    check(missing <= cancelled, f"fuzz: every request answered but those cancelled ({len(missing)} of {len(sent)})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--root", required=True, help="the kforge source folder")
    args = ap.parse_args()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kforge-mcp-test-") as tmp:
        raw_part(args, os.path.join(tmp, "raw.db"))
        fuzz_part(args)
        anyio.run(auto_part, args)
        anyio.run(sdk_part, args, os.path.join(tmp, "results.db"), os.path.join(tmp, "server.log"))
        print(f"mcp client test passed in {time.monotonic() - t0:.1f} s (SDK mcp {mcp_version()})")


def mcp_version():
    try:
        from importlib.metadata import version
        return version("mcp")
    except Exception:
        return "?"


if __name__ == "__main__":
    main()
