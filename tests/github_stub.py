"""A local stand-in for the part of GitHub's REST API that ``cudadoctor triage`` uses, served by
http.server in a thread: GET an issue, GET its comments (pages with a ``Link`` header), POST a
comment, PATCH a comment, POST labels; and on demand the failures GitHub answers with (a rate
limit as 403 with ``X-RateLimit-Remaining: 0`` or as 429, 401 for a bad token, 404, a renamed
repository's 301/307 redirects, a redirect loop, a slow answer). Every request is logged."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

Key = Tuple[str, str, int]


@dataclass
class Seen:
    method: str
    path: str
    authorization: Optional[str]
    body: Any = None


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

    def _send(self, h: BaseHTTPRequestHandler, code: int, value: Any, headers: Optional[Dict[str, str]] = None) -> None:
        self._send_raw(h, code, json.dumps(value).encode(), "application/json; charset=utf-8", headers)

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
