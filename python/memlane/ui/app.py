"""The viewer's web application: routes, forms and templates over :mod:`memlane.ui.views`.

Server-rendered HTML (Jinja2, autoescaped), readable without JavaScript, with no script at all:
forms do what a page changes (forget, undo) and :mod:`memlane.ui.guard`'s rules run before any
route. Starlette and uvicorn come with the MCP SDK memlane already depends on; Jinja2 is the
template engine Starlette supports.

Pages: ``/`` overview · ``/search`` · ``/sessions`` · ``/session?id=`` · ``/chunk?id=`` ·
``/brain`` · ``/brain/page?path=`` · ``/injections`` · ``/secrets``; actions (POST, CSRF):
``/forget``, ``/unforget``, after a confirmation page (``GET /forget``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from memlane.errors import InvalidArgumentError, MemlaneError
from memlane.memory import Memory
from memlane.ui.guard import COOKIE, HEADERS, Access
from memlane.ui.views import Views

_HERE = Path(__file__).parent
SEARCH_FILTERS = ("project", "branch", "source", "session", "since", "until")


class _Refused(MemlaneError):
    """A request the rules refuse: answered with ``status`` and one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _when(value: Any) -> str:
    """An ISO time as ``YYYY-MM-DD HH:MM`` (UTC), or a dash."""
    if not value:
        return "—"
    return str(value)[:16].replace("T", " ")


def _number(value: Any, digits: int = 3) -> str:
    """A score to ``digits`` places, or a dash when absent."""
    return "—" if value is None else f"{value:.{digits}f}"


def _size(n: int) -> str:
    """Bytes as ``512 B``, ``16.6 KiB``… ``2.1 GiB``."""
    if n < 1024:
        return f"{n:,} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} GiB"


def _templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,  # every value escaped: transcript text is data, never markup
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=_when, score=_number, size=_size, num=lambda n: f"{n:,}")
    env.globals["urlencode"] = urlencode
    return Jinja2Templates(env=env)


def create_app(mem: Memory, access: Access) -> Starlette:
    """The viewer of ``mem`` under ``access``'s rules."""
    views = Views(mem)
    templates = _templates()

    def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        context.update(csrf=access.csrf, read_only=access.read_only, sharded=views.sharded, home=str(mem.home))
        return templates.TemplateResponse(request, name, context, status_code=status)

    async def form(request: Request) -> FormData:
        """A POST's form, once the rules for actions pass."""
        if not access.origin_allowed(request.headers.get("origin")):
            raise _Refused(403, "cross-origin request refused")
        data = await request.form()
        csrf = data.get("csrf")
        if not access.csrf_matches(csrf if isinstance(csrf, str) else None):
            raise _Refused(403, "missing or stale form token: reload the page and try again")
        return data

    def field(data: FormData, name: str) -> str:
        value = data.get(name)
        if not isinstance(value, str) or not value:
            raise InvalidArgumentError(f"the form lacks {name!r}")
        return value

    def number(request: Request, name: str) -> int:
        try:
            return max(1, int(request.query_params.get(name, "1")))
        except ValueError:
            return 1

    async def overview(request: Request) -> Response:
        return page(request, "overview.html", o=views.overview())

    async def search(request: Request) -> Response:
        q = request.query_params.get("q", "")
        filters = {f: request.query_params.get(f, "") for f in SEARCH_FILTERS}
        return page(request, "search.html", r=views.search(q, filters), projects=views.projects())

    async def sessions(request: Request) -> Response:
        project = request.query_params.get("project") or None
        return page(
            request,
            "sessions.html",
            rows=views.sessions(project, number(request, "page")),
            project=project,
            projects=views.projects(),
        )

    async def session(request: Request) -> Response:
        sid = request.query_params.get("id", "")
        found = views.session(sid) if sid else None
        if found is None:
            return page(request, "missing.html", 404, what=f"session {sid!r}")
        return page(request, "session.html", s=found)

    async def chunk(request: Request) -> Response:
        cid = request.query_params.get("id", "")
        found = views.chunk(cid) if cid else None
        if found is None:
            return page(request, "missing.html", 404, what=f"chunk {cid!r}")
        return page(request, "chunk.html", c=found)

    async def brain(request: Request) -> Response:
        return page(request, "brain.html", b=views.brain())

    async def brain_page(request: Request) -> Response:
        path = request.query_params.get("path", "")
        if path not in views.brain_files():
            return page(request, "missing.html", 404, what=f"brain page {path!r}")
        return page(request, "brain_page.html", p=views.brain_file(path))

    async def injections(request: Request) -> Response:
        sid = request.query_params.get("session") or None
        key = request.query_params.get("key") or None
        rows = views.injections(sid, key, number(request, "page"))
        return page(request, "injections.html", rows=rows, session=sid, key=key)

    async def secrets_page(request: Request) -> Response:
        found = views.secrets(number(request, "page"), wait=False)
        if found is None:
            return page(request, "scanning.html")
        return page(request, "secrets.html", scanned=found[0], rows=found[1])

    async def confirm_forget(request: Request) -> Response:
        if access.read_only:
            raise _Refused(403, "this viewer is read-only (memlane ui --read-only): no action is taken")
        kind, value = request.query_params.get("kind", ""), request.query_params.get("value", "")
        preview = views.forget(kind, value, dry_run=True)
        return page(request, "forget.html", kind=kind, value=value, preview=preview)

    async def forget(request: Request) -> Response:
        data = await form(request)
        kind, value = field(data, "kind"), field(data, "value")
        done = views.forget(kind, value)
        query = urlencode({"kind": kind, "value": value, "chunks": done["chunks"]})
        return RedirectResponse(f"/forgotten?{query}", status_code=303)

    async def forgotten(request: Request) -> Response:
        q = request.query_params
        return page(
            request, "forgotten.html", kind=q.get("kind", ""), value=q.get("value", ""), chunks=q.get("chunks", "0")
        )

    async def unforget(request: Request) -> Response:
        data = await form(request)
        kind, value = field(data, "kind"), field(data, "value")
        views.forget(kind, value, undo=True)
        back = "/session" if kind == "session" else "/chunk"
        return RedirectResponse(f"{back}?{urlencode({'id': value})}", status_code=303)

    async def login(request: Request) -> Response:
        if request.method == "POST":
            data = await request.form()
            given = data.get("token")
            if access.token_matches(given if isinstance(given, str) else None):
                return _with_cookie(RedirectResponse("/", status_code=303), access)
            return page(request, "login.html", 401, failed=True)
        return page(request, "login.html", failed=False)

    def home_only(route: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        """A page only a home has: a sharded index says so instead."""

        async def answer(request: Request) -> Response:
            if views.sharded:
                what = "such page: a sharded index shows its overview, search and chunks (the rest is a home's: --home)"
                return page(request, "missing.html", 404, what=what)
            return await route(request)

        return answer

    async def rules(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        response = await _checked(request, call_next)
        response.headers.update(HEADERS)
        # The page's time in the server (a browser's developer tools show it; benches/bench_ui.py reads it).
        response.headers["server-timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.2f}"
        return response

    async def _checked(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if not access.host_allowed(request.headers.get("host")):
            return PlainTextResponse("Host header refused: open the address memlane ui printed", status_code=400)
        if access.token and request.url.path != "/login" and not request.url.path.startswith("/static/"):
            given = request.query_params.get("token")
            if given is not None and access.token_matches(
                given
            ):  # a link with the token: keep it, drop it from the URL
                rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
                return _with_cookie(RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), 303), access)
            if not access.token_matches(request.cookies.get(COOKIE)):
                return RedirectResponse("/login", status_code=303)
        if access.read_only and request.method == "POST" and request.url.path != "/login":
            message = "this viewer is read-only (memlane ui --read-only, or a sharded index): no action is taken"
            return page(request, "error.html", 403, message=message)
        return await call_next(request)

    async def refused(request: Request, exc: Exception) -> Response:
        status = exc.status if isinstance(exc, _Refused) else 400
        return page(request, "error.html", status, message=str(exc))

    routes = [
        Route("/", overview),
        Route("/search", search),
        Route("/chunk", chunk),
        Route("/sessions", home_only(sessions)),
        Route("/session", home_only(session)),
        Route("/brain", home_only(brain)),
        Route("/brain/page", home_only(brain_page)),
        Route("/injections", home_only(injections)),
        Route("/secrets", home_only(secrets_page)),
        Route("/forget", home_only(confirm_forget), methods=["GET"]),
        Route("/forget", home_only(forget), methods=["POST"]),
        Route("/forgotten", home_only(forgotten)),
        Route("/unforget", home_only(unforget), methods=["POST"]),
        Route("/login", login, methods=["GET", "POST"]),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=rules)],
        exception_handlers={MemlaneError: refused},
    )


def _with_cookie(response: Response, access: Access) -> Response:
    response.set_cookie(COOKIE, access.token or "", httponly=True, samesite="strict", path="/")
    return response


def serve(mem: Memory, access: Access, *, open_browser: bool = False) -> None:
    """Serve the viewer until interrupted (uvicorn, one process, the memory opened once).

    Raises:
        InvalidArgumentError: The address cannot be bound (in use, or not this machine's).
    """
    import socket

    import uvicorn

    # Bound here, before the address is printed: a port in use is one line, not uvicorn's log.
    family = socket.AF_INET6 if ":" in access.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((access.host, access.port))
    except OSError as exc:
        sock.close()
        raise InvalidArgumentError(
            f"cannot listen on {access.host}:{access.port} ({exc.strerror}): pass another --port or --host"
        ) from None
    url = f"http://{access.host if ':' not in access.host else f'[{access.host}]'}:{access.port}/"
    shown = url + (f"?{urlencode({'token': access.token})}" if access.token else "")
    print(f"memlane ui: {shown} (Ctrl-C stops it){' · read-only' if access.read_only else ''}", flush=True)
    if open_browser:
        import webbrowser

        webbrowser.open(shown)
    config = uvicorn.Config(create_app(mem, access), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
