"""MAAS's error responses (maas-api.md §4), raised by handlers and rendered by the server."""

from __future__ import annotations

import json


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        body: str | dict = "",
        *,
        content_type: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        if isinstance(body, dict):
            self.body = json.dumps(body).encode()
            self.content_type = content_type or "application/json"
        else:
            self.body = body.encode()
            self.content_type = content_type or "text/plain; charset=utf-8"
        self.status = status
        self.headers = headers or {}
        super().__init__(f"HTTP {status}: {body}")


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def field_errors(errors: dict[str, list[str]]) -> ApiError:
    return ApiError(400, errors)


def not_found(model: str = "Machine") -> ApiError:
    return ApiError(404, f"No {model} matches the given query.")


def forbidden(message: str = "") -> ApiError:
    return ApiError(403, message)


def conflict(message: str) -> ApiError:
    return ApiError(409, message)


def nginx_504() -> ApiError:
    """What MAAS's nginx returns after proxy_read_timeout, even when the request succeeded."""
    html = (
        "<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n"
        "<center><h1>504 Gateway Time-out</h1></center>\r\n<hr><center>nginx</center>\r\n"
        "</body>\r\n</html>\r\n"
    )
    return ApiError(504, html, content_type="text/html")
