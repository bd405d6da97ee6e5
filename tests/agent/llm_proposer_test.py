#!/usr/bin/env python3
"""Tests of examples/proposers/llm.py against a fake OpenAI-compatible server on 127.0.0.1
(tests/agent/fake_llm_server.py); nothing here reaches a network.

Unit tests: the reply parsing (fenced blocks in several forms, the JSON launch block, <think>),
Retry-After, the HTTP client's retries (500 then success, 429 with Retry-After, an error that
persists, a 401, a timeout, a refused connection), the bounded conversation, and the protocol
loop fed from a string (budget end, a reply without code twice, an endpoint that keeps failing).

End to end (needs --kforge): `kforge agent --problem gemm --budget 4` with the proposer against a
scripted model: a kernel with the tail bug (caught at a held-out shape), then, once the request
holds kforge's feedback about that failure, the fix; then a reply without code (answered by the
proposer, no attempt spent), the fast kernel, a 429 with Retry-After, and then 500s until the
proposer stops with the HTTP error as its reason. The run ends passed on the fast kernel.

Usage: llm_proposer_test.py --root REPO [--kforge build/kforge] [unittest args]
"""
import email.utils
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake_llm_server import FakeLLM  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KFORGE = None


def load_llm():
    spec = importlib.util.spec_from_file_location("kforge_llm_proposer", os.path.join(ROOT, "examples/proposers/llm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


llm = None


def gemm(name):
    with open(os.path.join(ROOT, "examples/proposers/gemm", name)) as f:
        return f.read()


def config(base_url, **extra):
    env = {"KFORGE_LLM_BASE_URL": base_url, "KFORGE_LLM_MODEL": "m", "KFORGE_LLM_BACKOFF": "0.5",
           "KFORGE_LLM_RETRIES": "2", "KFORGE_LLM_TIMEOUT": "5"}
    env.update(extra)
    return llm.Config(env)


def ok(text):
    return {"content": text}


# ---------------------------------------------------------------------------------------------


class ReplyParsing(unittest.TestCase):
    def test_a_cpp_block_and_a_json_launch(self):
        text = ("Tiles of 16 columns.\n\n```cpp\nstatic void body() {}\nKF_KERNEL(gemm, body)\n```\n\n"
                "```json\n{\"grid\": [\"ceil_div(M,BM)\"], \"params\": {\"BM\": 16, \"BN\": 8}}\n```\n")
        c = llm.parse_reply(text, "cpp")
        self.assertEqual(c["source"], "static void body() {}\nKF_KERNEL(gemm, body)\n")
        self.assertEqual(c["grid"], ["ceil_div(M,BM)"])
        self.assertEqual(c["params"], {"BM": 16, "BN": 8})
        self.assertEqual(c["note"], "Tiles of 16 columns.")
        self.assertNotIn("block", c)

    def test_fence_forms(self):
        forms = [
            "```c++ kernel.cpp\nint x;\n```",          # another tag, an info string after it
            "~~~\nint x;\n~~~",                         # tildes, no tag
            "  ```cpp\nint x;\n  ```",                  # indented fences
            "````cpp\nint x;\n````",                    # four backticks
            "```CPP\r\nint x;\r\n```\r\n",              # upper-case tag, CRLF
            "Here:\n```cpp\nint x;\n",                  # cut at the token limit: still open
        ]
        for text in forms:
            c = llm.parse_reply(text, "cpp")
            self.assertIsNotNone(c, text)
            self.assertEqual(c["source"], "int x;\n", text)

    def test_a_longer_fence_holds_a_shorter_one(self):
        text = "````cpp\n// ```not a fence end\nint x;\n```\nint y;\n````\n"
        self.assertEqual(llm.parse_reply(text, "cpp")["source"], "// ```not a fence end\nint x;\n```\nint y;\n")

    def test_the_language_tag_wins_over_length(self):
        text = "```\n" + "plain text\n" * 20 + "```\n```cpp\nint kernel;\n```\n"
        self.assertEqual(llm.parse_reply(text, "cpp")["source"], "int kernel;\n")
        self.assertEqual(llm.parse_reply("```cuda\n__global__ void k() {}\n```", "cuda")["source"],
                         "__global__ void k() {}\n")
        # Without a matching tag: the longest non-JSON block.
        text = "```python\nx = 1\n```\n```text\nint a; int b; int c;\n```\n"
        self.assertEqual(llm.parse_reply(text, "opencl")["source"], "int a; int b; int c;\n")

    def test_launch_forms(self):
        src = "```cpp\nint x;\n```\n"
        # A bare block holding a JSON object, one expression instead of a list, numbers as text.
        c = llm.parse_reply(src + '```\n{"grid": "ceil_div(M,32)", "block": [1, 2], "params": {"BM": "32", "X": 2.0, '
                                  '"bad": "x", "flag": true}, "note": "thirty-two rows"}\n```', "cpp")
        self.assertEqual(c["source"], "int x;\n")
        self.assertEqual(c["grid"], ["ceil_div(M,32)"])
        self.assertEqual(c["block"], ["1", "2"])
        self.assertEqual(c["params"], {"BM": 32, "X": 2})
        self.assertEqual(c["note"], "thirty-two rows")
        # The last launch block counts; a JSON block that does not parse is ignored, not taken as code.
        c = llm.parse_reply(src + '```json\n{"grid": ["1"]}\n```\n```json\n{"grid": ["2"],}\n```\n'
                                  '```json\n{"grid": ["3"]}\n```', "cpp")
        self.assertEqual(c["source"], "int x;\n")
        self.assertEqual(c["grid"], ["3"])
        # No launch: no geometry, no parameters (kforge's defaults: one block).
        c = llm.parse_reply(src, "cpp")
        self.assertEqual(set(c), {"source"})
        # Too many dimensions: dropped.
        self.assertNotIn("grid", llm.parse_reply(src + '```json\n{"grid": [1, 2, 3, 4]}\n```', "cpp"))

    def test_no_code(self):
        self.assertIsNone(llm.parse_reply("I would reorder the loops next.", "cpp"))
        self.assertIsNone(llm.parse_reply("", "cpp"))
        self.assertIsNone(llm.parse_reply('Only a launch:\n```json\n{"grid": ["1"]}\n```', "cpp"))
        self.assertIsNone(llm.parse_reply("```cpp\n\n```", "cpp"))

    def test_reasoning_is_skipped(self):
        text = "<think>maybe\n```cpp\nint draft;\n```\n</think>\nFinal.\n```cpp\nint final;\n```"
        c = llm.parse_reply(text, "cpp")
        self.assertEqual(c["source"], "int final;\n")
        self.assertEqual(c["note"], "Final.")
        self.assertIsNone(llm.parse_reply("<think>\n```cpp\nint draft;\n```\n", "cpp"))  # never closed

    def test_retry_after(self):
        self.assertEqual(llm.retry_after("3"), 3.0)
        self.assertEqual(llm.retry_after(" 0.5 "), 0.5)
        self.assertIsNone(llm.retry_after(None))
        self.assertIsNone(llm.retry_after("soon"))
        when = "Wed, 21 Oct 2026 07:28:10 GMT"
        now = email.utils.parsedate_to_datetime(when).timestamp() - 7.0
        self.assertAlmostEqual(llm.retry_after(when, now=now), 7.0, delta=0.01)
        self.assertEqual(llm.retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0.0)  # in the past


class Prompts(unittest.TestCase):
    TASK = {"type": "task", "problem": "gemm", "description": "C = alpha*A*B + beta*C", "backend": "cpu",
            "lang": "cpp", "entry": "gemm", "signature": {"cpp": "(const T* A, const T* B, T* C, int M)"},
            "conventions": "KF_KERNEL(gemm, body)", "sizes": {"M": 64}, "size_names": ["M"], "dtype": "fp32",
            "tensors": [{"name": "C", "role": "inout", "elements": 4096}], "scalars": ["alpha"],
            "tolerance": {"policy": "within the bound", "unit_roundoff": 6e-8, "reduction_length": 66},
            "held_out": "other shapes too", "baseline": {"name": "openblas_sgemm", "median_s": 5e-6},
            "sol_s": 4.4e-6, "sol_bound": "compute", "budget": 4, "remaining": 4, "batch": 1,
            "best": {"attempt": 2, "candidate_hash": "h", "median_s": 1e-4, "score": 123, "speedup": 0.05,
                     "note": "blocked"},
            "recent_failures": [{"attempt": 1, "disposition": "incorrect", "gate": "thorough_verify",
                                 "summary": "incorrect: check 'bound' failed", "note": "tail"}]}

    def test_the_task_prompt_carries_the_task(self):
        text = llm.task_prompt(self.TASK)
        for want in ("C = alpha*A*B + beta*C", "(const T* A, const T* B, T* C, int M)", "KF_KERNEL(gemm, body)",
                     "M=64", "fp32", "within the bound", "openblas_sgemm at 0.005 ms", "0.0044 ms (compute-bound)",
                     "Best so far (attempt 2, blocked)", "attempt 1 (tail): incorrect: check 'bound' failed",
                     "```json", "other shapes too"):
            self.assertIn(want, text)

    def test_feedback_text(self):
        fb = {"attempt": 3, "disposition": "compile_error", "gate": "compile", "summary": "compile error",
              "compile_errors": [{"line": 7, "column": 3, "message": "'BN' was not declared", "excerpt": "  j < BN"}],
              "remaining": 2, "recent_failures": [{"attempt": 1, "summary": "incorrect: tail"},
                                                  {"attempt": 3, "summary": "compile error"}]}
        text = llm.feedback_text(fb)
        self.assertIn("Compile error at line 7, column 3: 'BN' was not declared", text)
        self.assertIn("Earlier failures: attempt 1: incorrect: tail", text)
        self.assertNotIn("attempt 3: compile error", text)
        fb = {"attempt": 4, "disposition": "passed", "gate": "passed", "timing": {"median_s": 1.25e-5},
              "speedup": 0.37, "sol": {"fraction": 0.35, "bound": "compute"}, "gflops": 41.7, "gbytes_s": 5.2,
              "remaining": 0}
        text = llm.feedback_text(fb)
        for want in ("Attempt 4: passed", "median 0.0125 ms", "Speedup over the baseline: 0.37x",
                     "35% of it, compute-bound", "41.7 GFLOP/s"):
            self.assertIn(want, text)

    def test_the_conversation_is_bounded(self):
        conv = llm.Conversation("the task", keep=2)
        for i in range(6):
            conv.add("assistant", "reply %d" % i)
            conv.add("user", "feedback %d" % i)
        conv.best_source = (1, "```cpp\nBEST\n```", conv.turns[0])
        ms = conv.messages()
        self.assertEqual([m["role"] for m in ms], ["system", "user", "assistant", "user", "assistant", "user"])
        self.assertEqual(ms[1]["content"], "the task")
        self.assertEqual([m["content"][:10] for m in ms[2:]], ["reply 4", "feedback 4", "reply 5", "feedback 5"])
        self.assertIn("BEST", ms[-1]["content"])  # the best's source was trimmed away: shown again
        self.assertNotIn("BEST", conv.turns[-1]["content"])  # ... in the request only
        short = llm.Conversation("the task", keep=2)
        short.add("assistant", "reply")
        short.add("user", "feedback")
        short.best_source = (1, "BEST", short.turns[0])
        self.assertNotIn("BEST", short.messages()[-1]["content"])
        # Trimmed, but the best's own reply is still in the window: not repeated.
        conv.best_source = (6, "BEST", conv.turns[-2])
        self.assertNotIn("BEST", conv.messages()[-1]["content"])


class Client(unittest.TestCase):
    def client(self, server, **extra):
        waits = []
        c = llm.Client(config(server.base_url, **extra), sleep=waits.append)
        return c, waits

    def test_a_500_is_retried_with_backoff(self):
        with FakeLLM([{"status": 500, "body": '{"error": {"message": "overloaded"}}'},
                      {"status": 503}, ok("hello")]) as s:
            c, waits = self.client(s)
            self.assertEqual(c.chat([{"role": "user", "content": "hi"}]), "hello")
            self.assertEqual(waits, [0.5, 1.0])
            self.assertEqual(len(s.chats()), 3)
            self.assertEqual(s.chats()[0]["body"]["model"], "m")

    def test_a_429_waits_for_retry_after(self):
        with FakeLLM([{"status": 429, "headers": {"Retry-After": "3"}}, {"status": 429}, ok("hello")]) as s:
            c, waits = self.client(s, KFORGE_LLM_MAX_WAIT="60")
            self.assertEqual(c.chat([{"role": "user", "content": "hi"}]), "hello")
            self.assertEqual(waits, [3.0, 0.5])  # Retry-After, then the backoff where it is missing
        with FakeLLM([{"status": 429, "headers": {"Retry-After": "3600"}}, ok("hello")]) as s:
            c, waits = self.client(s, KFORGE_LLM_MAX_WAIT="10")
            c.chat([])
            self.assertEqual(waits, [10.0])  # capped

    def test_an_error_that_persists_fails_clearly(self):
        with FakeLLM([{"status": 500, "body": '{"error": {"message": "CUDA out of memory"}}'}] * 3) as s:
            c, waits = self.client(s)
            with self.assertRaises(llm.EndpointError) as e:
                c.chat([])
            self.assertEqual(len(s.chats()), 3)
            self.assertEqual(waits, [0.5, 1.0])
            msg = str(e.exception)
            self.assertIn("failed 3 times", msg)
            self.assertIn("HTTP 500", msg)
            self.assertIn("CUDA out of memory", msg)
            self.assertIn(s.base_url + "/chat/completions", msg)

    def test_the_turn_limit_bounds_the_retries(self):
        # A wait past the turn's limit is not taken: the proposer stops in time for kforge's
        # --proposer-timeout instead of being killed as a hung proposer.
        with FakeLLM([{"status": 429, "headers": {"Retry-After": "30"}}, ok("too late")]) as s:
            c, waits = self.client(s, KFORGE_LLM_TURN_LIMIT="5")
            c.start_turn()
            with self.assertRaises(llm.EndpointError) as e:
                c.chat([])
            self.assertEqual(waits, [])
            self.assertIn("failed 1 time (no time left to wait 30s: KFORGE_LLM_TURN_LIMIT=5s)", str(e.exception))
            self.assertIn("HTTP 429", str(e.exception))

    def test_a_401_is_not_retried(self):
        with FakeLLM([{"status": 401, "body": '{"error": {"message": "bad key"}}'}, ok("never")]) as s:
            c, waits = self.client(s, KFORGE_LLM_API_KEY="sk-test")
            with self.assertRaises(llm.EndpointError) as e:
                c.chat([])
            self.assertEqual(waits, [])
            self.assertIn("HTTP 401", str(e.exception))
            self.assertIn("bad key", str(e.exception))
            self.assertIn("KFORGE_LLM_API_KEY", str(e.exception))
            self.assertEqual(s.chats()[0]["authorization"], "Bearer sk-test")

    def test_a_timeout_is_retried(self):
        with FakeLLM([{"content": "late", "delay": 1.5}, ok("in time")]) as s:
            c, waits = self.client(s, KFORGE_LLM_TIMEOUT="0.3")
            self.assertEqual(c.chat([]), "in time")
            self.assertEqual(waits, [0.5])

    def test_an_unreachable_server(self):
        with FakeLLM([]) as s:
            url = s.base_url
        c = llm.Client(config(url), sleep=lambda w: None)
        with self.assertRaises(llm.EndpointError) as e:
            c.chat([])
        self.assertIn("cannot reach", str(e.exception))

    def test_a_reply_that_is_not_a_completion(self):
        with FakeLLM([{"status": 200, "body": '{"object": "error"}'}]) as s:
            c, _ = self.client(s)
            with self.assertRaises(llm.EndpointError) as e:
                c.chat([])
            self.assertIn("no choices[0].message", str(e.exception))

    def test_the_model_comes_from_the_server_when_unset(self):
        with FakeLLM([], model="served-model") as s:
            c, _ = self.client(s, KFORGE_LLM_MODEL="")
            self.assertEqual(c.resolve_model(), "served-model")


class Loop(unittest.TestCase):
    """The protocol loop with kforge's side played from a string."""

    def run_loop(self, server, lines, **extra):
        out = io.StringIO()
        stdin = io.StringIO("".join(json.dumps(m) + "\n" for m in lines))
        p = llm.Proposer(llm.Client(config(server.base_url, **extra), sleep=lambda w: None), stdin=stdin, stdout=out)
        rc = p.run()
        return rc, [json.loads(l) for l in out.getvalue().splitlines()]

    TASK = dict(Prompts.TASK, best=None, recent_failures=[], budget=1, remaining=1)

    def test_the_budget_ends_the_loop(self):
        reply = "Naive.\n```cpp\n" + gemm("naive.cpp") + "```\n```json\n{\"grid\": [\"ceil_div(M,BM)\"], \"params\": {\"BM\": 16}}\n```"
        fb = {"type": "feedback", "attempt": 1, "disposition": "passed", "gate": "passed", "summary": "passed",
              "remaining": 0, "next_batch": 0, "best": {"attempt": 1}}
        with FakeLLM([ok(reply)]) as s:
            rc, sent = self.run_loop(s, [self.TASK, fb, {"type": "done", "reason": "budget"}])
            self.assertEqual(rc, 0)
            self.assertEqual(len(sent), 1)
            self.assertEqual(sent[0]["type"], "candidate")
            self.assertEqual(sent[0]["source"], gemm("naive.cpp"))
            self.assertEqual(sent[0]["params"], {"BM": 16})
            self.assertEqual(sent[0]["note"], "Naive.")
            self.assertEqual(len(s.chats()), 1)  # no request after the last feedback

    def test_a_batch_of_two(self):
        # --parallel 2: two candidates per batch, the second asked for as a different one; both
        # feedbacks go back in one message before the next batch.
        task = dict(self.TASK, batch=2, budget=3, remaining=3)
        fb = lambda a, nb: {"type": "feedback", "attempt": a, "disposition": "passed", "gate": "passed",
                            "summary": "passed %d" % a, "remaining": 3 - a, "next_batch": nb}
        with FakeLLM([ok("```cpp\nint a;\n```"), ok("```cpp\nint b;\n```"),
                      {"expect": ["Attempt 1: passed", "Attempt 2: passed"], "content": "```cpp\nint c;\n```"}]) as s:
            rc, sent = self.run_loop(s, [task, fb(1, 1), fb(2, 1), fb(3, 0), {"type": "done", "reason": "budget"}])
            self.assertEqual(rc, 0)
            self.assertEqual([m["source"] for m in sent], ["int a;\n", "int b;\n", "int c;\n"])
            self.assertEqual(s.failures, [])
            self.assertIn("another, different kernel", s.chats()[1]["body"]["messages"][-1]["content"])

    def test_the_best_is_shown_again_once_trimmed(self):
        task = dict(self.TASK, budget=3, remaining=3)
        fb = lambda a, ok, nb: {"type": "feedback", "attempt": a, "disposition": "passed" if ok else "incorrect",
                                "gate": "passed" if ok else "quick_verify", "summary": "s", "remaining": 3 - a,
                                "next_batch": nb, "best": {"attempt": 1}}
        with FakeLLM([ok("```cpp\nint first;\n```\n```json\n{\"params\": {\"BM\": 8}}\n```"),
                      {"expect": ["Attempt 1: passed"], "content": "```cpp\nint second;\n```"},
                      {"expect": ["the best kernel so far (attempt 1)", "int first;", '"BM": 8'],
                       "content": "```cpp\nint third;\n```"}]) as s:
            rc, sent = self.run_loop(s, [task, fb(1, True, 1), fb(2, False, 1), fb(3, False, 0), {"type": "done"}],
                                     KFORGE_LLM_HISTORY="1")
            self.assertEqual(len(sent), 3)
            self.assertEqual(s.failures, [])
            roles = [m["role"] for m in s.chats()[2]["body"]["messages"]]
            self.assertEqual(roles, ["system", "user", "assistant", "user"])  # one exchange kept

    def test_twice_no_code_stops(self):
        with FakeLLM([ok("Let me think."), ok("Still thinking.")]) as s:
            rc, sent = self.run_loop(s, [self.TASK, {"type": "done", "reason": "stop"}])
            self.assertEqual(rc, 0)
            self.assertEqual([m["type"] for m in sent], ["stop"])
            self.assertIn("twice without a code block", sent[0]["reason"])
            self.assertIn("no fenced code block", s.chats()[1]["body"]["messages"][-1]["content"])

    def test_an_endpoint_that_keeps_failing_stops(self):
        with FakeLLM([{"status": 502}] * 3) as s:
            rc, sent = self.run_loop(s, [self.TASK, {"type": "done", "reason": "stop"}])
            self.assertEqual([m["type"] for m in sent], ["stop"])
            self.assertIn("HTTP 502", sent[0]["reason"])

    def test_no_base_url_stops(self):
        p = llm.Proposer(llm.Client(llm.Config({})), stdin=io.StringIO(json.dumps(self.TASK) + "\n"),
                         stdout=io.StringIO())
        self.assertEqual(p.run(), 0)
        self.assertIn("KFORGE_LLM_BASE_URL is not set", json.loads(p.stdout.getvalue())["reason"])


# ---------------------------------------------------------------------------------------------


def fenced(lang, source, launch, note):
    return "%s\n\n```%s\n%s```\n\n```json\n%s\n```\n" % (note, lang, source, json.dumps(launch))


class AgentEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="kforge-llm-test-")
        launch = {"grid": ["ceil_div(M,BM)"], "params": {"BM": 16, "BN": 16}}
        script = [
            {"expect": ["Signature (cpp): (const T* A, const T* B, T* C, int M, int N, int K",
                        "Sizes of this task: M=64, N=64, K=64", "openblas_sgemm"],
             "content": fenced("cpp", gemm("tiled_tail_bug.cpp"), launch, "Blocked over columns in tiles of BN.")},
            # kforge's feedback about the failure reached the model.
            {"expect": ["Attempt 1: incorrect (gate: thorough_verify)", "at a held-out shape",
                        "First bad element: C[M=", "Failed check: "],
             "content": fenced("c++", gemm("tiled_fixed.cpp"), launch, "The last tile is cut at N.")},
            {"expect": ["Attempt 2: passed", "Speedup over the baseline: "],
             "content": "The next step would be an i-k-j loop order so the inner loop vectorizes."},
            {"expect": ["no fenced code block"],
             "content": "i-k-j order, unit stride.\n```\n" + gemm("row_axpy.cpp") +
                        "```\n```\n{\"grid\": \"ceil_div(M,BM)\", \"params\": {\"BM\": 16}}\n```\n"},
            {"expect": ["Attempt 3: passed"], "status": 429, "headers": {"Retry-After": "1"}},
            {"status": 500, "body": '{"error": {"message": "the fake model is overloaded"}}'},
            {"status": 500, "body": '{"error": {"message": "the fake model is overloaded"}}'},
        ]
        cls.server = FakeLLM(script, model="fake-kernel-writer").__enter__()
        env = dict(os.environ, KFORGE_LLM_BASE_URL=cls.server.base_url, KFORGE_LLM_API_KEY="sk-fake",
                   KFORGE_LLM_RETRIES="2", KFORGE_LLM_BACKOFF="0.1", KFORGE_LLM_TIMEOUT="20",
                   OPENBLAS_THREAD_TIMEOUT="1")
        env.pop("KFORGE_LLM_MODEL", None)
        cls.log = os.path.join(cls.dir, "received.jsonl")
        cmd = [KFORGE, "agent", "--problem", "gemm", "--size", "M=64,N=64,K=64", "--threads", "1",
               "--min-time", "0.05", "--max-time", "0.5", "--budget", "4", "--no-index-width",
               "--proposer", "python3 %s/examples/proposers/llm.py --log %s" % (ROOT, cls.log),
               "--db", os.path.join(cls.dir, "results.db"), "--out", os.path.join(cls.dir, "out"), "--json"]
        t0 = time.time()
        cls.result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        cls.wall = time.time() - t0
        sys.stderr.write("kforge agent with llm.py: %.1fs\n%s" % (cls.wall, cls.result.stderr))
        try:
            cls.summary = json.loads(cls.result.stdout)
        except ValueError:
            cls.summary = None
        cls.received = []
        if os.path.exists(cls.log):
            with open(cls.log) as f:
                cls.received = [json.loads(l) for l in f if l.strip()]

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__(None, None, None)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def feedback(self):
        return {m["attempt"]: m for m in self.received if m["type"] == "feedback"}

    def test_every_request_held_what_it_expected(self):
        self.assertEqual(self.server.failures, [], self.result.stderr)
        chats = self.server.chats()
        # Every scripted step was asked for: 4 replies, then 3 tries (KFORGE_LLM_RETRIES=2): the 429, 2 x 500.
        self.assertEqual(len(chats), 7)
        self.assertEqual(chats[0]["body"]["model"], "fake-kernel-writer")  # from GET /models
        self.assertEqual(chats[0]["authorization"], "Bearer sk-fake")

    def test_the_bug_is_caught_and_its_feedback_reaches_the_model(self):
        fb = self.feedback()
        self.assertEqual(fb[1]["disposition"], "incorrect", json.dumps(fb.get(1), indent=1))
        self.assertEqual(fb[1]["gate"], "thorough_verify")
        self.assertTrue(fb[1]["failure"]["held_out"])
        self.assertEqual(fb[1]["failure"]["first_bad"]["tensor"], "C")
        # The second request: system, task, the buggy reply, and the feedback naming the bad element.
        msgs = self.server.chats()[1]["body"]["messages"]
        self.assertEqual([m["role"] for m in msgs], ["system", "user", "assistant", "user"])
        self.assertIn("KF_KERNEL(gemm, body)", msgs[2]["content"])
        bad = fb[1]["failure"]["first_bad"]
        self.assertIn("First bad element: C[%s]" % ", ".join("%s=%s" % kv for kv in bad["indices"].items()),
                      msgs[3]["content"])
        self.assertIn("Failed check: %s" % fb[1]["failure"]["check"], msgs[3]["content"])

    def test_the_reply_without_code_cost_no_attempt(self):
        self.assertIsNotNone(self.summary, self.result.stdout + self.result.stderr)
        self.assertEqual(self.summary["attempts"], 3)
        self.assertEqual(self.summary["evaluated"], 3)
        self.assertEqual(sorted(self.feedback()), [1, 2, 3])
        self.assertEqual(self.feedback()[3]["remaining"], 1)
        # After the answer, the reply without code is not in the conversation any more.
        later = json.dumps(self.server.chats()[4]["body"]["messages"])
        self.assertNotIn("The next step would be", later)
        self.assertIn("Attempt 3: passed", later)

    def test_the_run_ends_passed_on_the_fast_kernel(self):
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)
        fb = self.feedback()
        self.assertEqual(fb[2]["disposition"], "passed")
        self.assertEqual(fb[3]["disposition"], "passed")
        self.assertEqual(self.summary["best"]["attempt"], 3)
        self.assertEqual(self.summary["best"]["note"], "i-k-j order, unit stride.")
        self.assertTrue(self.summary["final_passed"])
        with open(os.path.join(self.dir, "out", "best.cpp")) as f:
            self.assertEqual(f.read(), gemm("row_axpy.cpp"))

    def test_the_endpoint_failure_stops_the_run_clearly(self):
        reason = self.summary["stop_reason"]
        self.assertIn("the proposer stopped", reason)
        self.assertIn("HTTP 500", reason)
        self.assertIn("the fake model is overloaded", reason)
        self.assertIn("HTTP 500", self.result.stderr)
        self.assertIn("HTTP 429", self.result.stderr)  # the 429 was waited out, then retried
        self.assertEqual(self.received[-1]["type"], "done")


def main():
    global KFORGE, ROOT, llm
    argv = sys.argv[1:]
    for flag in ("--kforge", "--root"):
        if flag in argv:
            i = argv.index(flag)
            value = os.path.abspath(argv[i + 1])
            del argv[i:i + 2]
            if flag == "--kforge":
                KFORGE = value
            else:
                ROOT = value
    llm = load_llm()
    if KFORGE is None:
        AgentEndToEnd.__unittest_skip__ = True
        AgentEndToEnd.__unittest_skip_why__ = "no --kforge"
    else:
        AgentEndToEnd.__unittest_skip__ = False
    unittest.main(argv=[sys.argv[0]] + argv, verbosity=2)


if __name__ == "__main__":
    main()
