#!/usr/bin/env python3
"""An LLM proposer for `kforge agent`: asks any OpenAI-compatible chat-completions endpoint for kernels.

Usage:
  export KFORGE_LLM_BASE_URL=http://localhost:8000/v1   # vLLM, llama.cpp's llama-server, a hosted API
  export KFORGE_LLM_MODEL=my-model                      # optional where the server serves one model
  build/kforge agent --problem gemm --budget 10 --proposer 'python3 examples/proposers/llm.py'

It reads kforge's `task`, builds a prompt from it (description, the ABI of the backend's language,
sizes, dtype, tolerance, baseline and speed-of-light times, the best so far, recent failures),
asks the model for a kernel, takes the source from the reply's fenced code block and the launch
geometry and parameters from a small ```json block (defaults: one block, no parameters), and
sends a `candidate`. Each `feedback` goes back to the model as the next user message; the
conversation sent is bounded: the system prompt, the task, and the last few exchanges.

A reply without a code block is answered once per turn with a reminder (no kforge attempt is
spent); HTTP errors, timeouts and unreachable servers are retried with exponential backoff (429:
after its Retry-After), and when they persist the proposer sends `stop` with the error as the
reason and says it on stderr. docs/commands/agent.md ("An LLM proposer") has the details.

Environment (only KFORGE_LLM_BASE_URL is required):
  KFORGE_LLM_BASE_URL      the API root, e.g. http://localhost:8000/v1 (POST BASE/chat/completions)
  KFORGE_LLM_MODEL         the model name; unset: the first model GET BASE/models lists
  KFORGE_LLM_API_KEY       sent as "Authorization: Bearer KEY" when set
  KFORGE_LLM_TEMPERATURE   sampling temperature (default 0.2)
  KFORGE_LLM_MAX_TOKENS    the reply's token limit (default 4096; 0: the server's default)
  KFORGE_LLM_TIMEOUT       seconds to wait for one HTTP reply (default 120)
  KFORGE_LLM_RETRIES       retries of a failed request before giving up (default 4)
  KFORGE_LLM_BACKOFF       the first retry's delay in seconds, doubled each time (default 2)
  KFORGE_LLM_MAX_WAIT      the longest single wait, Retry-After included (default 60)
  KFORGE_LLM_HISTORY       exchanges kept in the conversation besides the task (default 3)
  KFORGE_LLM_TURN_LIMIT    seconds one candidate may take, retries included (default 280: under
                           kforge's --proposer-timeout of 300 s; raise both for a slow model)
Options: --log FILE appends every message received from kforge, one per line.

Python 3 standard library only.
"""
import json
import os
import re
import socket
import sys
import time
import urllib.error
import urllib.request
from email.utils import parsedate_to_datetime

NAME = "llm.py"


def log(text):
    sys.stderr.write("%s: %s\n" % (NAME, text))
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# Configuration


class Config:
    def __init__(self, env=None):
        env = os.environ if env is None else env
        self.base_url = env.get("KFORGE_LLM_BASE_URL", "").strip().rstrip("/")
        self.model = env.get("KFORGE_LLM_MODEL", "").strip()
        self.api_key = env.get("KFORGE_LLM_API_KEY", "").strip()
        self.temperature = float(env.get("KFORGE_LLM_TEMPERATURE", "0.2"))
        self.max_tokens = int(env.get("KFORGE_LLM_MAX_TOKENS", "4096"))
        self.timeout = float(env.get("KFORGE_LLM_TIMEOUT", "120"))
        self.retries = int(env.get("KFORGE_LLM_RETRIES", "4"))
        self.backoff = float(env.get("KFORGE_LLM_BACKOFF", "2"))
        self.max_wait = float(env.get("KFORGE_LLM_MAX_WAIT", "60"))
        self.history = max(1, int(env.get("KFORGE_LLM_HISTORY", "3")))
        self.turn_limit = float(env.get("KFORGE_LLM_TURN_LIMIT", "280"))


# ---------------------------------------------------------------------------------------------
# The endpoint


class EndpointError(Exception):
    """The endpoint failed for good (after the retries, or at once for an error a retry cannot fix)."""


RETRYABLE = {408, 409, 425, 429, 500, 502, 503, 504}

HINTS = {
    401: "check KFORGE_LLM_API_KEY",
    403: "check KFORGE_LLM_API_KEY and the model's access",
    404: "check KFORGE_LLM_BASE_URL (it usually ends in /v1) and KFORGE_LLM_MODEL",
}


def retry_after(value, now=None):
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if unusable."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _short(text, limit=300):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _error_body(err):
    try:
        body = err.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the body is only for the message
        return ""
    try:  # OpenAI-style {"error": {"message": ...}}
        j = json.loads(body)
        e = j.get("error") if isinstance(j, dict) else None
        if isinstance(e, dict) and e.get("message"):
            return str(e["message"])
        if isinstance(e, str):
            return e
    except ValueError:
        pass
    return body


class Client:
    """POSTs chat completions, retrying what a retry may fix. `sleep` is replaceable in tests."""

    def __init__(self, config, sleep=time.sleep):
        self.config = config
        self.sleep = sleep
        self.requests = 0
        self.deadline = None  # time.monotonic() by which the current turn must end

    def start_turn(self):
        self.deadline = time.monotonic() + self.config.turn_limit if self.config.turn_limit > 0 else None

    def _left(self):
        return None if self.deadline is None else self.deadline - time.monotonic()

    def _headers(self):
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.api_key:
            h["Authorization"] = "Bearer " + self.config.api_key
        return h

    def _once(self, method, path, payload=None, timeout=None):
        """One request; returns the parsed JSON or raises (HTTPError, URLError, timeout, ValueError)."""
        data = json.dumps(payload).encode("utf-8") if payload is not None else None
        req = urllib.request.Request(self.config.base_url + path, data=data, headers=self._headers(), method=method)
        self.requests += 1
        with urllib.request.urlopen(req, timeout=timeout or self.config.timeout) as resp:
            body = resp.read().decode("utf-8", "replace")
        try:
            return json.loads(body)
        except ValueError:
            raise ValueError("the reply is not JSON: " + _short(body, 200))

    def request(self, method, path, payload=None, what="request"):
        """The request with retries; raises EndpointError with a clear message when it fails for good."""
        url = self.config.base_url + path
        delay = self.config.backoff
        last = ""
        tries = 0
        gave_up = ""
        for attempt in range(self.config.retries + 1):
            wait = None
            timeout = self.config.timeout
            left = self._left()
            if left is not None:
                if left <= 0.05:
                    gave_up = " (out of time: KFORGE_LLM_TURN_LIMIT=%gs)" % self.config.turn_limit
                    break
                timeout = min(timeout, left)
            tries += 1
            try:
                return self._once(method, path, payload, timeout)
            except urllib.error.HTTPError as e:
                body = _error_body(e)
                last = "HTTP %d %s from %s%s" % (e.code, e.reason or "", url, (": " + _short(body)) if body else "")
                if e.code not in RETRYABLE:
                    hint = HINTS.get(e.code)
                    raise EndpointError(last + (" (%s)" % hint if hint else ""))
                if e.code == 429:
                    wait = retry_after(e.headers.get("Retry-After") if e.headers else None)
            except urllib.error.URLError as e:
                reason = e.reason
                if isinstance(reason, (socket.timeout, TimeoutError)):
                    last = "no reply from %s within %.3gs (KFORGE_LLM_TIMEOUT)" % (url, timeout)
                else:
                    last = "cannot reach %s: %s" % (url, reason)
            except (socket.timeout, TimeoutError):
                last = "no reply from %s within %.3gs (KFORGE_LLM_TIMEOUT)" % (url, timeout)
            except (ConnectionError, OSError) as e:
                last = "the connection to %s failed: %s" % (url, e)
            except ValueError as e:
                last = "%s from %s: %s" % (what, url, e)
            if attempt == self.config.retries:
                break
            if wait is None:
                wait = delay
                delay *= 2
            wait = min(wait, self.config.max_wait)
            left = self._left()
            if left is not None and wait >= left:
                gave_up = " (no time left to wait %.3gs: KFORGE_LLM_TURN_LIMIT=%gs)" % (wait, self.config.turn_limit)
                break
            log("%s failed (%s); retry %d of %d in %.1fs" % (what, last, attempt + 1, self.config.retries, wait))
            self.sleep(wait)
        raise EndpointError("%s failed %d time%s%s, the last: %s" % (what, tries, "" if tries == 1 else "s", gave_up, last))

    def resolve_model(self):
        if self.config.model:
            return self.config.model
        j = self.request("GET", "/models", what="listing the models")
        data = j.get("data") if isinstance(j, dict) else None
        if not data or not isinstance(data, list) or not isinstance(data[0], dict) or not data[0].get("id"):
            raise EndpointError("GET %s/models lists no model: set KFORGE_LLM_MODEL" % self.config.base_url)
        self.config.model = data[0]["id"]
        log("model: %s (the first GET /models lists; KFORGE_LLM_MODEL picks another)" % self.config.model)
        return self.config.model

    def chat(self, messages):
        """The assistant's reply text to `messages`."""
        payload = {"model": self.config.model, "messages": messages, "temperature": self.config.temperature}
        if self.config.max_tokens > 0:
            payload["max_tokens"] = self.config.max_tokens
        j = self.request("POST", "/chat/completions", payload, what="the chat completion")
        try:
            choice = j["choices"][0]
            content = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise EndpointError("the chat completion from %s has no choices[0].message: %s" %
                                (self.config.base_url, _short(json.dumps(j), 300)))
        if choice.get("finish_reason") == "length":
            log("the reply was cut at the token limit (KFORGE_LLM_MAX_TOKENS=%d)" % self.config.max_tokens)
        return content


# ---------------------------------------------------------------------------------------------
# The reply

LANG_TAGS = {
    "cpp": {"cpp", "c++", "cxx", "cc", "c", "hpp", "h"},
    "cuda": {"cuda", "cu", "cpp", "c++", "c"},
    "opencl": {"opencl", "cl", "ocl", "c"},
}
LAUNCH_KEYS = ("grid", "block", "params", "note", "entry")

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*([^\n`]*)$")
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)


def fenced_blocks(text):
    """The fenced code blocks of a Markdown text: a list of (info tag, body), in order.

    Fences of three or more backticks or tildes, with or without an info string (```cpp,
    ``` c++ title, ~~~), indented up to three spaces; a block closes at a fence of the same
    character at least as long. A block still open at the end (a reply cut at the token limit)
    counts, up to the end. Reasoning in <think>...</think> is skipped.
    """
    text = _THINK.sub("", text.replace("\r\n", "\n"))
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).strip()
        tag = info.split()[0].lower() if info else ""
        body = []
        i += 1
        while i < len(lines):
            close = re.match(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*$", lines[i])
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                break
            body.append(lines[i])
            i += 1
        i += 1
        blocks.append((tag, "\n".join(body).strip("\n") + "\n"))
    return blocks


def _launch(obj):
    if not isinstance(obj, dict):
        return None
    out = {}
    for key in ("grid", "block"):
        v = obj.get(key)
        if isinstance(v, (str, int)) and not isinstance(v, bool):
            v = [v]
        if isinstance(v, list) and 1 <= len(v) <= 3 and all(isinstance(e, (str, int)) and not isinstance(e, bool)
                                                            for e in v):
            out[key] = [e if isinstance(e, str) else str(e) for e in v]
    params = obj.get("params")
    if isinstance(params, dict):
        good = {}
        for k, v in params.items():
            if isinstance(v, bool):
                continue
            if isinstance(v, int):
                good[str(k)] = v
            elif isinstance(v, float) and v.is_integer():
                good[str(k)] = int(v)
            elif isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
                good[str(k)] = int(v)
        if good:
            out["params"] = good
    for key in ("note", "entry"):
        if isinstance(obj.get(key), str) and obj[key].strip():
            out[key] = obj[key].strip()
    return out


def parse_reply(text, lang="cpp"):
    """The candidate fields a reply holds: {"source", and optionally "grid", "block", "params",
    "note", "entry"}, or None when the reply has no code block.

    The source is the first block tagged with the language (```cpp for the cpu backend), else the
    longest untagged or other non-JSON block. The launch is the last ```json block (or a bare
    block that parses as a JSON object) with any of grid, block, params, note; grid and block
    may be one expression or a list of up to three. Without a note there, the reply's first line
    of prose is the note.
    """
    blocks = fenced_blocks(text)
    launch = None
    code = []
    for tag, body in blocks:
        stripped = body.strip()
        if tag in ("json", "jsonc", "json5") or (stripped.startswith("{") and stripped.endswith("}") and
                                                  tag in ("", "javascript")):
            try:
                obj = json.loads(stripped)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and any(k in obj for k in LAUNCH_KEYS):
                launch = obj
                continue
            if tag in ("json", "jsonc", "json5"):
                continue
        if stripped:
            code.append((tag, body))
    if not code:
        return None
    tags = LANG_TAGS.get(lang, {lang})
    tagged = [b for t, b in code if t in tags]
    source = tagged[0] if tagged else max((b for _, b in code), key=len)
    out = {"source": source}
    fields = _launch(launch) if launch is not None else None
    if fields:
        out.update(fields)
    if "note" not in out:
        prose = _THINK.sub("", text)
        for line in prose.split("\n"):
            line = line.strip().lstrip("#*->").strip()
            if line and not line.startswith(("```", "~~~")):
                out["note"] = line[:200]
                break
            if line.startswith(("```", "~~~")):
                break
    if "note" in out:
        out["note"] = out["note"][:300]
    return out


# ---------------------------------------------------------------------------------------------
# The prompt

SYSTEM = (
    "You are an expert performance engineer who writes fast, correct compute kernels. "
    "kforge compiles each kernel you write, verifies it against a high-precision reference "
    "(including at shapes you are not shown), times it against a baseline and a speed-of-light "
    "bound, and tells you the verdict. Answer every time with exactly one complete kernel source "
    "in one fenced code block, then a small ```json block with its launch, then nothing long: "
    "no other code blocks."
)


def _fmt_time(s):
    if s is None:
        return "unknown"
    return "%.4g ms" % (s * 1e3)


def _fmt_pct(x):
    return "%.3g%%" % (100.0 * x) if isinstance(x, (int, float)) else "unknown"


def _fmt_num(x):
    return "%.3g" % x if isinstance(x, (int, float)) else str(x)


def task_prompt(task):
    lang = task.get("lang", "cpp")
    sig = (task.get("signature") or {}).get(lang, "")
    entry = task.get("entry", "")
    sizes = task.get("sizes") or {}
    order = [n for n in task.get("size_names") or [] if n in sizes] + sorted(n for n in sizes if n not in
                                                                            (task.get("size_names") or []))
    size_text = ", ".join("%s=%s" % (k, sizes[k]) for k in order)
    lines = [
        "Write a %s kernel for the problem '%s' on kforge's %s backend." % (lang, task.get("problem"), task.get("backend")),
        "",
        "Problem: %s" % task.get("description", ""),
        "Entry point: %s" % entry,
        "Signature (%s): %s" % (lang, sig),
        "  - tensors in order, then the sizes as int, then the scalars as float; T is the dtype's element type.",
    ]
    if task.get("conventions"):
        lines.append("Conventions: %s" % task["conventions"])
    tensors = task.get("tensors") or []
    if tensors:
        lines.append("Tensors: " + ", ".join("%s (%s, %s elements)" % (t.get("name"), t.get("role"), t.get("elements"))
                                             for t in tensors))
    if task.get("scalars"):
        lines.append("Scalars: " + ", ".join(task["scalars"]))
    lines.append("Sizes of this task: %s" % size_text)
    lines.append("dtype: %s" % task.get("dtype"))
    tol = task.get("tolerance") or {}
    if tol:
        lines.append("Correctness: %s; unit roundoff %s%s." % (
            tol.get("policy", ""), _fmt_num(tol.get("unit_roundoff")),
            ", reduction length %s" % _fmt_num(tol["reduction_length"]) if "reduction_length" in tol else ""))
    if task.get("held_out"):
        lines.append("Held-out shapes: %s. Handle every size, including 1, primes and sizes that are not "
                     "multiples of your tile sizes." % task["held_out"])
    base = task.get("baseline")
    if base:
        lines.append("Baseline: %s at %s." % (base.get("name"), _fmt_time(base.get("median_s"))))
    if task.get("sol_s"):
        lines.append("Speed of light at these sizes: %s (%s-bound)." % (_fmt_time(task["sol_s"]), task.get("sol_bound", "")))
    if task.get("flops") or task.get("bytes"):
        lines.append("Work: %s FLOP, at least %s bytes moved." % (_fmt_num(task.get("flops")), _fmt_num(task.get("bytes"))))
    if task.get("score"):
        lines.append("Score: %s." % task["score"])
    lines.append("Budget: %s attempts (%s left)." % (task.get("budget"), task.get("remaining")))
    best = task.get("best")
    if best:
        lines.append("Best so far (attempt %s%s): %s, speedup %sx, %s of the speed of light." % (
            best.get("attempt"), ", " + best["note"] if best.get("note") else "", _fmt_time(best.get("median_s")),
            _fmt_num(best.get("speedup")), _fmt_pct(best.get("sol_fraction"))))
    fails = task.get("recent_failures") or []
    if fails:
        lines.append("Recent failures:")
        for f in fails:
            lines.append("  - attempt %s (%s): %s" % (f.get("attempt"), f.get("note", ""), f.get("summary")))
    lines += [
        "",
        "Reply with:",
        "1. one line saying what the kernel does differently (it becomes the attempt's note);",
        "2. the complete source in one ```%s block; it must name %s%s;" % (
            lang, entry, " and end with KF_KERNEL(%s, body)" % entry if lang == "cpp" else ""),
        '3. a ```json block with the launch: {"grid": [...], "block": [...], "params": {...}}. grid and block '
        "are 1 to 3 expressions over the size and parameter names (ceil_div(a,b), min, max, + - * /), e.g. "
        '"grid": ["ceil_div(M,BM)"]; params are integers that reach the source as #define NAME value, e.g. '
        '"params": {"BM": 16}. Without this block the kernel runs as one block (grid [1], block [1]) '
        "with no parameters.",
        "The kernel runs in a sandbox: no files, processes or sockets. Start with a correct kernel, then make "
        "it faster.",
    ]
    return "\n".join(lines)


def feedback_text(fb):
    """A feedback message as the model reads it: the verdict, its evidence, the numbers."""
    lines = ["Attempt %s: %s (gate: %s)" % (fb.get("attempt"), fb.get("disposition"), fb.get("gate"))]
    if fb.get("summary"):
        lines.append("Summary: %s" % fb["summary"])
    for e in fb.get("compile_errors") or []:
        lines.append("Compile error at line %s, column %s: %s" % (e.get("line"), e.get("column"), e.get("message")))
        if e.get("excerpt"):
            lines.append(_indent(e["excerpt"], 4000))
    f = fb.get("failure")
    if f:
        lines.append("Failed check: %s%s" % (f.get("check"), " at a held-out shape" if f.get("held_out") else ""))
        if f.get("sizes"):
            lines.append("Sizes: %s" % ", ".join("%s=%s" % kv for kv in f["sizes"].items()))
        if f.get("detail"):
            lines.append("Detail: %s" % _short(f["detail"], 800))
        bad = f.get("first_bad")
        if bad:
            where = bad.get("indices")
            where = ", ".join("%s=%s" % kv for kv in where.items()) if isinstance(where, dict) and where else \
                "flat index %s" % bad.get("index")
            lines.append("First bad element: %s[%s]: got %s, expected %s (bound %s)" % (
                bad.get("tensor"), where, bad.get("got"), bad.get("expected"), _fmt_num(bad.get("bound"))))
        counts = [(k, f.get(k)) for k in ("bad_elements", "unwritten", "non_finite", "elements") if f.get(k) is not None]
        if counts:
            lines.append("Elements: " + ", ".join("%s %s" % (k.replace("_", " "), v) for k, v in counts))
    if fb.get("error") and not f and not fb.get("compile_errors"):
        lines.append("Error: %s" % _short(fb["error"], 1500))
    if fb.get("timing"):
        t = fb["timing"]
        lines.append("Time: median %s (min %s, spread %s)" % (
            _fmt_time(t.get("median_s")), _fmt_time(t.get("min_s")), _fmt_pct(t.get("rel_spread"))))
    if fb.get("baseline"):
        lines.append("Baseline %s: %s" % (fb["baseline"].get("name"), _fmt_time(fb["baseline"].get("median_s"))))
    if fb.get("speedup") is not None:
        lines.append("Speedup over the baseline: %sx" % _fmt_num(fb["speedup"]))
    sol = fb.get("sol")
    if sol:
        lines.append("Speed of light: %s of it, %s-bound%s" % (
            _fmt_pct(sol.get("fraction")), sol.get("bound"),
            " (memory roof: %s)" % sol["memory_roof"] if sol.get("memory_roof") else ""))
    if fb.get("gflops") is not None:
        lines.append("Throughput: %s GFLOP/s, %s GB/s" % (_fmt_num(fb.get("gflops")), _fmt_num(fb.get("gbytes_s"))))
    counters = fb.get("counters")
    if isinstance(counters, str) and counters and not counters.startswith("unavailable"):
        lines.append("Hardware counters: %s" % counters)
    older = [r for r in fb.get("recent_failures") or [] if r.get("attempt") != fb.get("attempt")]
    if older:
        lines.append("Earlier failures: " + "; ".join("attempt %s: %s" % (r.get("attempt"), _short(r.get("summary", ""), 200))
                                                       for r in older))
    best = fb.get("best")
    if best:
        lines.append("Best so far: attempt %s, %s, speedup %sx" % (
            best.get("attempt"), _fmt_time(best.get("median_s")), _fmt_num(best.get("speedup"))))
    lines.append("Attempts left: %s" % fb.get("remaining"))
    return "\n".join(lines)


def _indent(text, limit):
    text = text if len(text) <= limit else text[:limit] + "\n..."
    return "\n".join("    " + l for l in text.split("\n"))


NO_CODE = ("Your reply had no fenced code block, so kforge had nothing to evaluate (no attempt was "
           "spent). Reply again with the complete kernel source in one ```%s block and its launch in a "
           "```json block.")


# ---------------------------------------------------------------------------------------------
# The conversation


class Conversation:
    """The system prompt, the task, and the last `keep` exchanges (assistant reply + the user's answer)."""

    def __init__(self, task_text, keep):
        self.head = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task_text}]
        self.turns = []  # alternating assistant, user, ...; ends with a user message when a reply is due
        self.keep = keep
        # (attempt, its source and launch as Markdown, the assistant turn that wrote it): shown
        # again with the latest message once that turn is trimmed away.
        self.best_source = None

    def add(self, role, content):
        self.turns.append({"role": role, "content": content})

    def drop_last(self, n):
        del self.turns[len(self.turns) - n:]

    def messages(self):
        turns = self.turns[-2 * self.keep:] if self.keep > 0 else []
        if turns and turns[0]["role"] != "assistant":
            turns = turns[1:]
        trimmed = len(turns) < len(self.turns)
        out = list(self.head) + [dict(t) for t in turns]
        if trimmed and self.best_source and out[-1]["role"] == "user":
            attempt, text, turn = self.best_source
            if not any(t is turn for t in turns):
                out[-1]["content"] += ("\n\nFor reference, the best kernel so far (attempt %s):\n%s" % (attempt, text))
        return out


# ---------------------------------------------------------------------------------------------
# The protocol


class Proposer:
    def __init__(self, client, stdin=sys.stdin, stdout=sys.stdout, log_file=None):
        self.client = client
        self.stdin = stdin
        self.stdout = stdout
        self.log_file = log_file
        self.conv = None
        self.lang = "cpp"

    def receive(self):
        line = self.stdin.readline()
        if not line:
            return None
        if self.log_file:
            self.log_file.write(line if line.endswith("\n") else line + "\n")
            self.log_file.flush()
        return json.loads(line)

    def send(self, message):
        self.stdout.write(json.dumps(message) + "\n")
        self.stdout.flush()

    def propose(self):
        """(the candidate, the assistant turn that wrote it) from the model (the conversation ends
        with a user message); (None, reason) when there is none to send; or raises EndpointError."""
        self.client.start_turn()
        reply = self.client.chat(self.conv.messages())
        self.conv.add("assistant", reply)
        cand = parse_reply(reply, self.lang)
        if cand is None:
            log("the reply has no code block; asking again (no attempt spent)")
            self.conv.add("user", NO_CODE % self.lang)
            reply2 = self.client.chat(self.conv.messages())
            cand = parse_reply(reply2, self.lang)
            if cand is None:
                return None, "the model replied twice without a code block: %s" % _short(reply2 or "(empty)", 200)
            # Keep the conversation clean: the reply that counts replaces the one without code.
            self.conv.drop_last(2)
            self.conv.add("assistant", reply2)
        cand.setdefault("note", "llm")
        message = {"type": "candidate"}
        message.update(cand)
        return message, self.conv.turns[-1]

    def run(self):
        task = self.receive()
        if task is None or task.get("type") != "task":
            log("expected a task first")
            return 2
        self.lang = task.get("lang", "cpp")
        if not self.client.config.base_url:
            return self.stop("KFORGE_LLM_BASE_URL is not set (the API root, e.g. http://localhost:8000/v1)")
        self.conv = Conversation(task_prompt(task), self.client.config.history)
        log("%s at %s, budget %s, model endpoint %s" % (task.get("problem"), task.get("sizes"), task.get("budget"),
                                                        self.client.config.base_url))
        try:
            self.client.start_turn()
            self.client.resolve_model()
        except EndpointError as e:
            return self.stop(str(e))
        batch = task.get("batch", 1)
        while batch > 0:
            sources, turns = [], []
            for i in range(batch):
                if i > 0:
                    self.conv.add("user", "Now another, different kernel: it is evaluated beside the previous one.")
                try:
                    message, reply = self.propose()
                except EndpointError as e:
                    reason = "the endpoint failed: %s" % e
                    if not sources:
                        return self.stop(reason)
                    self.send({"type": "stop", "reason": reason})
                    log(reason)
                    break
                if message is None:
                    if not sources:
                        return self.stop(reply)
                    self.send({"type": "stop", "reason": reply})
                    log(reply)
                    break
                self.send(message)
                sources.append(message)
                turns.append(reply)
            feedbacks = []
            for _ in sources:
                fb = self.receive()
                if fb is None:
                    return 0
                feedbacks.append(fb)
                log("attempt %s: %s" % (fb.get("attempt"), fb.get("summary", "")))
                best = fb.get("best")
                if best and best.get("attempt") == fb.get("attempt"):
                    cand = sources[len(feedbacks) - 1]
                    self.conv.best_source = (fb.get("attempt"), "```%s\n%s```\n```json\n%s\n```" % (
                        self.lang, cand["source"], json.dumps({k: cand[k] for k in ("grid", "block", "params")
                                                               if k in cand})), turns[len(feedbacks) - 1])
            if len(sources) < batch or not feedbacks:
                break
            batch = feedbacks[-1].get("next_batch", 0)
            text = "\n\n".join(feedback_text(fb) for fb in feedbacks)
            if batch > 0:
                text += "\n\nWrite the next kernel: fix what failed, or make the best one faster."
            self.conv.add("user", text)
        self.receive()  # done
        return 0

    def stop(self, reason):
        log("stopping: %s" % reason)
        self.send({"type": "stop", "reason": reason})
        self.receive()  # done
        return 0


def main(argv):
    log_path = None
    if "--log" in argv:
        i = argv.index("--log")
        log_path = argv[i + 1]
        del argv[i:i + 2]
    if argv:
        sys.stderr.write(__doc__)
        return 2
    try:
        config = Config()
    except ValueError as e:
        log("a KFORGE_LLM_* variable is not a number: %s" % e)
        return 2
    log_file = open(log_path, "a") if log_path else None
    return Proposer(Client(config), log_file=log_file).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
