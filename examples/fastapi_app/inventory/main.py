"""The FastAPI app."""

from __future__ import annotations

import logging
import os
from typing import Any, Optional

import httpx
from fastapi import APIRouter, FastAPI, HTTPException
from pydantic import BaseModel
from sqlalchemy import Integer, String, create_engine, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.pool import StaticPool

log = logging.getLogger("inventory")


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    stock: Mapped[int] = mapped_column(Integer, default=0)


class NewItem(BaseModel):
    name: str
    stock: int = 0


def as_dict(item: Item) -> dict[str, Any]:
    return {"id": item.id, "name": item.name, "stock": item.stock}


def create_app(database_url: Optional[str] = None, rates_url: Optional[str] = None) -> FastAPI:
    # One shared in-memory database for every thread (StaticPool: a single connection).
    engine = create_engine(
        database_url or os.environ.get("INVENTORY_DATABASE", "sqlite://"),
        connect_args={"check_same_thread": False},
        poolclass=StaticPool,
    )
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        if session.scalar(select(Item.id).limit(1)) is None:
            session.add_all([Item(name="bolt", stock=100), Item(name="nut", stock=250)])
            session.commit()
    rates = rates_url or os.environ.get("INVENTORY_RATES_URL", "http://127.0.0.1:8002")

    router = APIRouter()

    @router.get("/items")
    def list_items(limit: int = 10) -> list[dict[str, Any]]:
        with Session(engine) as session:
            return [
                as_dict(i) for i in session.scalars(select(Item).order_by(Item.id).limit(limit))
            ]

    @router.get("/items/{item_id}")
    def get_item(item_id: int) -> dict[str, Any]:
        with Session(engine) as session:
            item = session.get(Item, item_id)
            if item is None:
                raise HTTPException(status_code=404, detail="no such item")
            return as_dict(item)

    @router.post("/items", status_code=201)
    def add_item(new: NewItem) -> dict[str, Any]:
        with Session(engine) as session:
            item = Item(name=new.name, stock=new.stock)
            session.add(item)
            session.commit()
            log.info("added item %s", item.name)
            return as_dict(item)

    app = FastAPI()
    app.include_router(router, prefix="/v1")

    @app.get("/rates")
    async def get_rates(currency: str = "EUR") -> dict[str, Any]:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"{rates}/rates", params={"currency": currency})
        return {"currency": currency, "rates": response.json()}

    @app.get("/fail")
    def fail() -> dict[str, Any]:
        raise ValueError("inventory failure")

    return app
