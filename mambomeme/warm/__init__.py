"""Warm search: a server process that keeps engines open for repeated CLI searches."""

from __future__ import annotations

from mambomeme.warm.client import start_server, stop_server, warm_search
from mambomeme.warm.server import ServeConfig, serve

__all__ = ["ServeConfig", "serve", "start_server", "stop_server", "warm_search"]
