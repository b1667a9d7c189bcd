"""The Flask app: routes of the shop."""

from __future__ import annotations

import logging
import os
import sqlite3
from typing import Any, Optional

from flask import Flask, abort, g, jsonify, request

from shop import db
from shop.pricing import PricingClient, PricingError

log = logging.getLogger("shop")


class OrderError(ValueError):
    """An order request that cannot be fulfilled."""


def create_app(database: Optional[str] = None, pricing_url: Optional[str] = None) -> Flask:
    app = Flask("shop")
    app.config["DATABASE"] = database or os.environ.get("SHOP_DATABASE", "tmp/shop.db")
    app.config["PRICING_URL"] = pricing_url or os.environ.get(
        "SHOP_PRICING_URL", "http://127.0.0.1:8001"
    )
    directory = os.path.dirname(app.config["DATABASE"])
    if directory:
        os.makedirs(directory, exist_ok=True)
    db.init(app.config["DATABASE"])
    pricing = PricingClient(app.config["PRICING_URL"])

    def conn() -> sqlite3.Connection:
        if "db" not in g:
            g.db = db.connect(app.config["DATABASE"])
        return g.db  # type: ignore[no-any-return]

    @app.teardown_appcontext
    def close_db(_: Optional[BaseException]) -> None:
        connection = g.pop("db", None)
        if connection is not None:
            connection.close()

    @app.get("/products")
    def list_products() -> Any:
        return jsonify(db.list_products(conn(), request.args.get("q")))

    @app.get("/products/<int:product_id>")
    def show_product(product_id: int) -> Any:
        product = db.find_product(conn(), product_id)
        if product is None:
            abort(404)
        return jsonify(product)

    @app.post("/orders")
    def create_order() -> Any:
        payload = request.get_json(silent=True) or {}
        try:
            order = place_order(conn(), pricing, payload)
        except OrderError as exc:
            return jsonify({"error": str(exc)}), 400
        except PricingError as exc:
            return jsonify({"error": str(exc)}), 502
        return jsonify(order), 201

    @app.get("/orders/<order_id>")
    def show_order(order_id: str) -> Any:
        order = db.find_order(conn(), order_id)
        if order is None:
            abort(404)
        return jsonify(order)

    @app.get("/boom")
    def boom() -> Any:
        raise RuntimeError("the shop exploded")

    return app


def place_order(
    connection: sqlite3.Connection, pricing: PricingClient, payload: dict[str, Any]
) -> dict[str, Any]:
    """Validate an order request, price it with the pricing service and store it."""
    try:
        product_id = int(payload["product_id"])
        quantity = int(payload.get("quantity", 1))
    except (KeyError, TypeError, ValueError) as exc:
        raise OrderError("product_id and quantity must be integers") from exc
    if quantity < 1:
        raise OrderError("quantity must be at least 1")
    product = db.find_product(connection, product_id)
    if product is None:
        raise OrderError(f"no product {product_id}")
    total = pricing.quote(product_id, quantity, product["price_cents"])
    order = db.create_order(connection, product_id, quantity, total)
    log.info("order %s created: %s x %s", order["id"], quantity, product["name"])
    return order
