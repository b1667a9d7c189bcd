"""SQLite storage (stdlib sqlite3): schema, seed data and the queries the routes use."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any, Optional

SCHEMA = """
CREATE TABLE IF NOT EXISTS products (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    price_cents INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS orders (
    id TEXT PRIMARY KEY,
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity INTEGER NOT NULL,
    total_cents INTEGER NOT NULL
);
"""

PRODUCTS = [(1, "Teapot", 2500), (2, "Tea cup", 800), (3, "Kettle", 4200)]


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


def init(path: str) -> None:
    conn = connect(path)
    try:
        conn.executescript(SCHEMA)
        if conn.execute("SELECT COUNT(*) FROM products").fetchone()[0] == 0:
            conn.executemany(
                "INSERT INTO products (id, name, price_cents) VALUES (?, ?, ?)", PRODUCTS
            )
        conn.commit()
    finally:
        conn.close()


def list_products(conn: sqlite3.Connection, search: Optional[str] = None) -> list[dict[str, Any]]:
    if search:
        rows = conn.execute(
            "SELECT id, name, price_cents FROM products WHERE name LIKE ? ORDER BY id",
            (f"%{search}%",),
        )
    else:
        rows = conn.execute("SELECT id, name, price_cents FROM products ORDER BY id")
    return [dict(row) for row in rows]


def find_product(conn: sqlite3.Connection, product_id: int) -> Optional[dict[str, Any]]:
    row = conn.execute(
        "SELECT id, name, price_cents FROM products WHERE id = ?", (product_id,)
    ).fetchone()
    return dict(row) if row else None


def create_order(
    conn: sqlite3.Connection, product_id: int, quantity: int, total_cents: int
) -> dict[str, Any]:
    order_id = uuid.uuid4().hex
    conn.execute(
        "INSERT INTO orders (id, product_id, quantity, total_cents) VALUES (?, ?, ?, ?)",
        (order_id, product_id, quantity, total_cents),
    )
    conn.commit()
    return {
        "id": order_id,
        "product_id": product_id,
        "quantity": quantity,
        "total_cents": total_cents,
    }


def find_order(conn: sqlite3.Connection, order_id: str) -> Optional[dict[str, Any]]:
    row = conn.execute(
        "SELECT id, product_id, quantity, total_cents FROM orders WHERE id = ?", (order_id,)
    ).fetchone()
    return dict(row) if row else None
