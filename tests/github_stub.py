"""A local stand-in for the part of GitHub's REST API that ``cudadoctor triage`` uses, served by
http.server in a thread: GET an issue, GET its comments (pages with a ``Link`` header), POST a
comment, PATCH a comment, POST labels; and on demand the failures GitHub answers with (a rate
limit as 403 with ``X-RateLimit-Remaining: 0`` or as 429, 401 for a bad token, 404, a renamed
repository's 301/307 redirects, a redirect loop, a slow answer). Every request is logged.

It also misbehaves the ways a hostile server would (:data:`HOSTILE`): an answer that trickles in
a byte at a time (its headers or its body), one that never ends, a gzip bomb, JSON nested
100,000 deep, a ``Retry-After`` of 5,000 digits, a 401 that quotes the token back, a server that
accepts the connection and says nothing."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

Key = Tuple[str, str, int]
HOSTILE = ("drip-body", "drip-headers", "endless", "gzip-bomb", "deep-json", "huge-retry-after", "echo-token",
           "silent", "huge-reset")


@dataclass
class Seen:
    method: str
    path: str
    authorization: Optional[str]
    body: Any = None
    at: float = field(default_factory=time.monotonic)  # when it arrived


@dataclass
class User:
    login: str
    type: str = "User"  # User | Bot
    association: str = "NONE"


@dataclass
class FakeGitHub:
    page_size: int = 100  # comments per page (GitHub's per_page, at most 100)
    tokens: Dict[str, User] = field(default_factory=dict)  # a token -> who writes with it
    failure: Optional[str] = None  # rate-403 | rate-429 | secondary | 500 | slow | loop | elsewhere | html | read-only
    renamed: Dict[Tuple[str, str], Tuple[str, str]] = field(default_factory=dict)  # old -> new repository
    slow_s: float = 2.0
    issues: Dict[Key, Dict[str, Any]] = field(default_factory=dict)
    comments: Dict[Key, List[Dict[str, Any]]] = field(default_factory=dict)
    labels: Dict[Key, List[str]] = field(default_factory=dict)
    seen: List[Seen] = field(default_factory=list)
    next_id: int = 9000
    url: str = ""
    stopping: bool = False
    gzip: bool = False  # answers compressed, as GitHub sends them
    sent_bytes: int = 0  # of the hostile answers, before the client hung up

    # ------------------------------------------------------------------ the data

    def add_issue(self, owner: str, repo: str, number: int, body: str, title: str = "",
                  author: str = "reporter") -> Key:
        key = (owner, repo, number)
        self.issues[key] = {
            "number": number, "title": title, "body": body, "state": "open", "comments": 0,
            "user": {"login": author, "type": "User"}, "html_url": f"https://github.com/{owner}/{repo}/issues/{number}",
            "repository_url": f"{self.url}/repos/{owner}/{repo}", "url": f"{self.url}/repos/{owner}/{repo}/issues/{number}",
        }
        self.comments[key] = []
        return key

    def add_comment(self, key: Key, author: str, body: str, type: str = "User", association: str = "NONE",
                    app: bool = False) -> Dict[str, Any]:
        self.next_id += 1
        comment = {"id": self.next_id, "body": body, "user": {"login": author, "type": type},
                   "author_association": association, "performed_via_github_app": {"slug": "x"} if app else None,
                   "html_url": f"https://github.com/{key[0]}/{key[1]}/issues/{key[2]}#issuecomment-{self.next_id}"}
        self.comments[key].append(comment)
        self.issues[key]["comments"] = len(self.comments[key])
        return comment

    def requests(self, method: str) -> List[Seen]:
        return [s for s in self.seen if s.method == method]

    # ------------------------------------------------------------------ the server

    def start(self) -> "FakeGitHub":
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                stub._handle(self, "GET")

            def do_POST(self) -> None:
                stub._handle(self, "POST")

            def do_PATCH(self) -> None:
                stub._handle(self, "PATCH")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping = True
        self._server.shutdown()
        self._server.server_close()

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        auth = h.headers.get("Authorization")
        self.seen.append(Seen(method, h.path, auth, body))
        parts = urlsplit(h.path)
        if self.failure == "slow":
            time.sleep(self.slow_s)
        if self.failure in HOSTILE:
            return self._hostile(h, self.failure, auth)
        if self.failure == "rate-403":
            reset = int(time.time()) + 600
            return self._send(h, 403, {"message": "API rate limit exceeded for 127.0.0.1.",
                                       "documentation_url": "https://docs.github.com/rest/rate-limit"},
                              {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)})
        if self.failure == "rate-429":
            return self._send(h, 429, {"message": "Too many requests"}, {"Retry-After": "30"})
        if self.failure == "secondary":
            return self._send(h, 403, {"message": "You have exceeded a secondary rate limit."}, {"Retry-After": "60"})
        if self.failure == "500":
            return self._send(h, 502, {"message": "Server Error"})
        if self.failure == "html":
            return self._send_raw(h, 200, b"<html>GitHub</html>", "text/html")
        if self.failure == "loop":
            return self._send(h, 301, {}, {"Location": h.path})
        if self.failure == "elsewhere":
            return self._send(h, 301, {}, {"Location": "https://evil.example.com" + h.path})
        if self.failure == "read-only" and method != "GET":
            return self._send(h, 403, {"message": "Resource not accessible by integration"})
        if auth is not None:
            token = auth.split(" ", 1)[-1]
            if token not in self.tokens:
                return self._send(h, 401, {"message": "Bad credentials"})
        user = self.tokens.get(auth.split(" ", 1)[-1]) if auth else None
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues/(\d+|comments/\d+)(/comments|/labels)?", parts.path)
        if not m:
            return self._send(h, 404, {"message": "Not Found"})
        owner, repo = m.group(1), m.group(2)
        if (owner, repo) in self.renamed:  # GitHub: 301 to a GET, 307 to a write (the method kept)
            new = self.renamed[(owner, repo)]
            location = h.path.replace(f"/repos/{owner}/{repo}/", f"/repos/{new[0]}/{new[1]}/", 1)
            return self._send(h, 301 if method == "GET" else 307, {"message": "Moved Permanently"},
                              {"Location": self.url + location})
        if m.group(3).startswith("comments/"):
            return self._edit(h, method, owner, repo, int(m.group(3).split("/")[1]), body, user)
        key = (owner, repo, int(m.group(3)))
        if key not in self.issues:
            return self._send(h, 404, {"message": "Not Found"})
        tail = m.group(4)
        if method == "GET" and tail is None:
            return self._send(h, 200, self.issues[key])
        if method == "GET" and tail == "/comments":
            query = parse_qs(parts.query)
            per_page = min(int(query.get("per_page", ["30"])[0]), self.page_size)
            page = int(query.get("page", ["1"])[0])
            items = self.comments[key]
            chunk = items[(page - 1) * per_page: page * per_page]
            headers = {}
            last = max(1, -(-len(items) // per_page))
            if page < last:
                base = f"{self.url}{parts.path}?per_page={per_page}"
                headers["Link"] = f'<{base}&page={page + 1}>; rel="next", <{base}&page={last}>; rel="last"'
            return self._send(h, 200, chunk, headers)
        if user is None:
            return self._send(h, 401, {"message": "Requires authentication"})
        if method == "POST" and tail == "/comments":
            comment = self.add_comment(key, user.login, body["body"], user.type, user.association,
                                       app=user.type == "Bot")
            return self._send(h, 201, comment)
        if method == "POST" and tail == "/labels":
            if not isinstance(body, dict) or not isinstance(body.get("labels"), list):
                return self._send(h, 422, {"message": "Validation Failed", "errors": [{"code": "invalid"}]})
            self.labels.setdefault(key, [])
            self.labels[key] += [x for x in body["labels"] if x not in self.labels[key]]
            return self._send(h, 200, [{"name": x} for x in self.labels[key]])
        return self._send(h, 404, {"message": "Not Found"})

    def _edit(self, h: BaseHTTPRequestHandler, method: str, owner: str, repo: str, cid: int, body: Any,
              user: Optional[User]) -> None:
        if method != "PATCH":
            return self._send(h, 404, {"message": "Not Found"})
        if user is None:
            return self._send(h, 401, {"message": "Requires authentication"})
        for (o, r, _), comments in self.comments.items():
            for c in comments:
                if (o, r) == (owner, repo) and c["id"] == cid:
                    if c["user"]["login"] != user.login and user.association not in ("OWNER", "MEMBER"):
                        return self._send(h, 403, {"message": "Resource not accessible by integration"})
                    c["body"] = body["body"]
                    return self._send(h, 200, c)
        return self._send(h, 404, {"message": "Not Found"})

    def _hostile(self, h: BaseHTTPRequestHandler, failure: str, auth: Optional[str]) -> None:
        try:
            if failure == "silent":  # the connection accepted, nothing said
                while not self.stopping and self._open(h):
                    time.sleep(0.05)
            elif failure == "drip-headers":
                h.wfile.write(b"HTTP/1.1 200 OK\r\n")
                self._drip(h, b"X-Padding: " + b"a" * 100_000)
            elif failure == "drip-body":
                h.send_response(200)
                h.send_header("Content-Type", "application/json")
                h.send_header("Content-Length", "100000")
                h.end_headers()
                self._drip(h, b'{"title": "' + b"a" * 99_000)
            elif failure == "endless":  # no length, no end: the connection closes when the reader hangs up
                h.send_response(200)
                h.send_header("Content-Type", "application/json")
                h.end_headers()
                h.wfile.write(b'{"title": "')
                block = b"a" * (1 << 20)
                while not self.stopping:
                    h.wfile.write(block)
                    self.sent_bytes += len(block)
            elif failure == "gzip-bomb":  # 1 GiB of spaces in ~1 MB
                data = _bomb()
                self._send_raw(h, 200, data, "application/json", {"Content-Encoding": "gzip"})
            elif failure == "deep-json":
                self._send_raw(h, 200, b"[" * 100_000 + b"]" * 100_000, "application/json")
            elif failure == "huge-retry-after":
                self._send(h, 429, {"message": "Too many requests"}, {"Retry-After": "9" * 5000})
            elif failure == "huge-reset":
                self._send(h, 403, {"message": "API rate limit exceeded"},
                           {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "9" * 5000})
            elif failure == "echo-token":
                token = (auth or "").split(" ", 1)[-1]
                self._send(h, 401, {"message": f"Bad credentials: {token} is not valid",
                                    "errors": [{"message": f"token {token}"}]})
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client hung up: what it should do

    def _drip(self, h: BaseHTTPRequestHandler, data: bytes) -> None:
        """``data`` a byte every 0.1 s, until the client hangs up."""
        for i in range(len(data)):
            if self.stopping:
                return
            h.wfile.write(data[i:i + 1])
            h.wfile.flush()
            self.sent_bytes += 1
            time.sleep(0.1)

    @staticmethod
    def _open(h: BaseHTTPRequestHandler) -> bool:
        """Whether the client still holds the connection."""
        try:
            return h.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    def _send(self, h: BaseHTTPRequestHandler, code: int, value: Any, headers: Optional[Dict[str, str]] = None) -> None:
        data = json.dumps(value).encode()
        if self.gzip:
            import gzip

            data, headers = gzip.compress(data), {**(headers or {}), "Content-Encoding": "gzip"}
        self._send_raw(h, code, data, "application/json; charset=utf-8", headers)

    @staticmethod
    def _send_raw(h: BaseHTTPRequestHandler, code: int, data: bytes, kind: str,
                  headers: Optional[Dict[str, str]] = None) -> None:
        try:
            h.send_response(code)
            h.send_header("Content-Type", kind)
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


_BOMB: List[bytes] = []


def _bomb() -> bytes:
    """1 GiB of spaces as gzip (about 1 MB): one 1 MiB block compressed after a full flush gives
    the same bytes every time, so it is compressed once and repeated."""
    if not _BOMB:
        import struct
        import zlib

        block = b" " * (1 << 20)
        compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        once = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
        crc = 0
        for _ in range(1024):
            crc = zlib.crc32(block, crc)
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
        end = compressor.flush(zlib.Z_FINISH)
        _BOMB.append(header + once * 1024 + end + struct.pack("<II", crc, (1 << 30) & 0xFFFFFFFF))
    return _BOMB[0]
