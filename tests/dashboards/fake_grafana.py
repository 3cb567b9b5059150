"""A loopback stand-in for Grafana's HTTP API that checks every request against the documented shapes.

Documented (Grafana HTTP API reference): every call carries `Authorization: Bearer <token>`;
GET /api/health; GET /api/datasources/uid/:uid, POST /api/datasources (name, type, access, url),
PUT /api/datasources/uid/:uid (name, type, access); GET /api/folders/:uid, POST /api/folders
(title, optional uid <= 40 chars), PUT /api/folders/:uid (title, version or overwrite);
GET /api/dashboards/uid/:uid, POST /api/dashboards/db (dashboard with title and id null
for new ones, folderUid, overwrite, message); GET /api/search. Anything else is a violation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from werkzeug import Request, Response


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


@dataclass
class FakeGrafana:
    """State (data sources, folders, dashboards) plus the log of requests and shape violations."""

    token: str
    datasources: dict[str, dict] = field(default_factory=dict)
    folders: dict[str, dict] = field(default_factory=dict)
    dashboards: dict[str, dict] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def handle(self, request: Request) -> Response:
        """Werkzeug handler for pytest-httpserver's respond_with_handler."""
        path, method = request.path, request.method
        self.calls.append((method, path))
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return _json({"message": "Unauthorized"}, 401)
        body = request.get_json(silent=True) if method in ("POST", "PUT") else None
        if method in ("POST", "PUT") and not isinstance(body, dict):
            return self._violation(f"{method} {path} without a JSON object body")
        for pattern, verb, handler in self._routes():
            match = re.fullmatch(pattern, path)
            if match and verb == method:
                return handler(body, *match.groups())
        return self._violation(f"undocumented request {method} {path}")

    def _routes(self) -> list[tuple[str, str, Any]]:
        return [
            (
                r"/api/health",
                "GET",
                lambda _b: _json({"commit": "abc", "database": "ok", "version": "11.6.0"}),
            ),
            (r"/api/datasources/uid/([^/]+)", "GET", self._get_datasource),
            (r"/api/datasources", "POST", self._create_datasource),
            (r"/api/datasources/uid/([^/]+)", "PUT", self._update_datasource),
            (r"/api/folders/([^/]+)", "GET", self._get_folder),
            (r"/api/folders", "POST", self._create_folder),
            (r"/api/folders/([^/]+)", "PUT", self._update_folder),
            (r"/api/dashboards/uid/([^/]+)", "GET", self._get_dashboard),
            (r"/api/dashboards/db", "POST", self._save_dashboard),
            (
                r"/api/search",
                "GET",
                lambda _b: _json(
                    [
                        {"uid": u, "title": d["dashboard"]["title"], "type": "dash-db"}
                        for u, d in self.dashboards.items()
                    ]
                ),
            ),
        ]

    def _violation(self, what: str) -> Response:
        self.violations.append(what)
        return _json({"message": what}, 400)

    def _missing(self, body: dict, *names: str) -> list[str]:
        return [n for n in names if n not in body]

    def _get_datasource(self, _body: None, uid: str) -> Response:
        found = self.datasources.get(uid)
        return _json(found) if found else _json({"message": "Data source not found"}, 404)

    def _create_datasource(self, body: dict) -> Response:
        if missing := self._missing(body, "name", "type", "access", "url"):
            return self._violation(f"POST /api/datasources lacks {missing}")
        if any(d["name"] == body["name"] for d in self.datasources.values()):
            return _json({"message": "data source with the same name already exists"}, 409)
        record = {**body, "id": len(self.datasources) + 1}
        self.datasources[body.get("uid") or f"ds{record['id']}"] = record
        return _json(
            {"datasource": record, "id": record["id"], "message": "Datasource added", "name": body["name"]}
        )

    def _update_datasource(self, body: dict, uid: str) -> Response:
        if missing := self._missing(body, "name", "type", "access"):
            return self._violation(f"PUT /api/datasources/uid lacks {missing}")
        if uid not in self.datasources:
            return _json({"message": "Data source not found"}, 404)
        self.datasources[uid] = {**self.datasources[uid], **body}
        return _json(
            {
                "datasource": self.datasources[uid],
                "id": self.datasources[uid]["id"],
                "message": "Datasource updated",
                "name": body["name"],
            }
        )

    def _get_folder(self, _body: None, uid: str) -> Response:
        found = self.folders.get(uid)
        return _json(found) if found else _json({"message": "folder not found"}, 404)

    def _create_folder(self, body: dict) -> Response:
        if "title" not in body or len(body.get("uid", "")) > 40:
            return self._violation("POST /api/folders needs a title and a uid of at most 40 characters")
        uid = body.get("uid") or f"f{len(self.folders) + 1}"
        if uid in self.folders:
            return _json({"message": "a folder with the same uid already exists"}, 409)
        self.folders[uid] = {"id": len(self.folders) + 1, "uid": uid, "title": body["title"], "version": 1}
        return _json(self.folders[uid])

    def _update_folder(self, body: dict, uid: str) -> Response:
        if "title" not in body or not ("version" in body or body.get("overwrite") is True):
            return self._violation("PUT /api/folders/:uid needs a title and a version or overwrite")
        if uid not in self.folders:
            return _json({"message": "folder not found"}, 404)
        folder = self.folders[uid]
        folder.update(title=body["title"], version=folder["version"] + 1)
        return _json(folder)

    def _get_dashboard(self, _body: None, uid: str) -> Response:
        found = self.dashboards.get(uid)
        return _json(found) if found else _json({"message": "Dashboard not found"}, 404)

    def _save_dashboard(self, body: dict) -> Response:
        board = body.get("dashboard")
        if not isinstance(board, dict) or not board.get("title"):
            return self._violation("POST /api/dashboards/db needs dashboard.title")
        if board.get("id") is not None or len(board.get("uid", "")) > 40:
            return self._violation("dashboard.id must be null (uid decides) and uid at most 40 characters")
        if not isinstance(body.get("overwrite"), bool) or not isinstance(body.get("folderUid"), str):
            return self._violation("POST /api/dashboards/db needs overwrite (bool) and folderUid (str)")
        if body["folderUid"] not in self.folders:
            return _json({"message": "folder not found"}, 400)
        uid = board["uid"]
        old = self.dashboards.get(uid)
        if old and not body["overwrite"]:
            return _json(
                {"message": "The dashboard has been changed by someone else", "status": "version-mismatch"},
                412,
            )
        version = old["dashboard"]["version"] + 1 if old else 1
        stored = {
            **board,
            "id": old["dashboard"]["id"] if old else len(self.dashboards) + 1,
            "version": version,
        }
        self.dashboards[uid] = {"dashboard": stored, "meta": {"folderUid": body["folderUid"]}}
        return _json(
            {
                "id": stored["id"],
                "uid": uid,
                "url": f"/d/{uid}/x",
                "status": "success",
                "version": version,
                "slug": "x",
            }
        )
