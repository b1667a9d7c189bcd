"""A small shop: products, orders, a pricing service called over HTTP. Flask + SQLite.

Example app for tracetool's agent: routes with path parameters, JSON bodies, SQL, an outgoing
HTTP call, logging and a route that raises. `create_app(database, pricing_url)` builds the app;
`python -m shop.server` serves it.
"""

from __future__ import annotations

from shop.app import create_app

__all__ = ["create_app"]
