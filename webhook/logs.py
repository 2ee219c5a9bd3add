"""One JSON object per log line, with the fields a handler passed in `extra` (e.g. `object`)."""

from __future__ import annotations

import logging
import re
import sys
import time
from typing import Any

import orjson

__all__ = ["setup", "zap_level"]

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD:
                entry[key] = value
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


# controller-runtime's `--zap-log-level` (pkg/log/zap/flags.go): a name, or N > 0 for logr's V(N).
# logr's V(n) is zap's level -n; here a V(n) line sits n below INFO, so `log.info` is V(0), upstream's
# `debug` is V(1), and `log.debug` (10) is V(10).
_ZAP_NAMES = {"debug": logging.INFO - 1, "info": logging.INFO, "error": logging.ERROR, "panic": logging.CRITICAL}
_GO_INT = re.compile(r"[+-]?[0-9]+")


def zap_level(value: str) -> int:
    """The Python level of a `--zap-log-level` value; ValueError with controller-runtime's message."""
    if (named := _ZAP_NAMES.get(value.lower())) is not None:
        return named
    if not _GO_INT.fullmatch(value) or int(value) <= 0:
        raise ValueError(f'invalid log level "{value}"')
    return max(logging.INFO - int(value), logging.NOTSET)  # past V(20), everything


def setup(level: str | int = "INFO") -> None:
    """JSON lines on stderr at `level`: a Python level name (`--log-level`) or number (`zap_level`)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper() if isinstance(level, str) else level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
