"""A fake OpenAI-compatible chat-completions server for the tests of examples/proposers/llm.py.

It listens on 127.0.0.1 at an ephemeral port and answers POST /v1/chat/completions from a script:
a list of steps, each one reply:
  {"content": "...",                      a 200 with this assistant message
   "expect": ["text", ...],               substrings the request's messages must hold (else 400)
   "status": 500, "headers": {...},       an HTTP error instead (e.g. 429 with Retry-After)
   "body": "...",                         its body
   "delay": 2.0}                          seconds to wait before answering
GET /v1/models lists one model. Every request is recorded (`requests`: method, path, the parsed
body, the step it got, and a list of unmet expectations); when the script runs out the server
answers 500 "the script is over". Standard library only; nothing leaves the loopback interface.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeLLM:
    def __init__(self, script, model="fake-model"):
        self.script = list(script)
        self.model = model
        self.requests = []
        self.failures = []  # unmet expectations, as text
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body, headers=None):
                data = body.encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, str(v))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test)

            def do_GET(self):
                with fake.lock:
                    fake.requests.append({"method": "GET", "path": self.path})
                if self.path.rstrip("/").endswith("/models"):
                    self._answer(200, json.dumps({"object": "list", "data": [{"id": fake.model, "object": "model"}]}))
                else:
                    self._answer(404, json.dumps({"error": {"message": "no route " + self.path}}))

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length).decode("utf-8")
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with fake.lock:
                    record = {"method": "POST", "path": self.path, "body": body,
                              "authorization": self.headers.get("Authorization"), "unmet": []}
                    fake.requests.append(record)
                    if not self.path.endswith("/chat/completions"):
                        self._answer(404, json.dumps({"error": {"message": "no route " + self.path}}))
                        return
                    if not fake.script:
                        self._answer(500, json.dumps({"error": {"message": "the script is over"}}))
                        return
                    step = fake.script.pop(0)
                    record["step"] = step
                if step.get("delay"):
                    time.sleep(step["delay"])
                text = "\n".join(str(m.get("content", "")) for m in (body or {}).get("messages", []))
                for want in step.get("expect", []):
                    if want not in text:
                        record["unmet"].append(want)
                        with fake.lock:
                            fake.failures.append("request %d lacks %r" % (len(fake.requests), want))
                if record["unmet"]:
                    self._answer(400, json.dumps({"error": {"message": "expected in the messages: %r" % record["unmet"]}}))
                    return
                if "status" in step:
                    self._answer(step["status"], step.get("body", json.dumps({"error": {"message": "scripted error"}})),
                                 step.get("headers"))
                    return
                self._answer(200, json.dumps({
                    "id": "chatcmpl-fake-%d" % len(fake.requests),
                    "object": "chat.completion",
                    "model": fake.model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": step["content"]},
                                 "finish_reason": "stop"}],
                }))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self):
        return "http://127.0.0.1:%d/v1" % self.server.server_address[1]

    def chats(self):
        """The chat-completion requests, in order."""
        return [r for r in self.requests if r["method"] == "POST"]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
