"""A tiny FastAPI + SQLAlchemy inventory, the FastAPI/Starlette example for tracetool's agent.

Routes: `GET /v1/items`, `GET /v1/items/{item_id}`, `POST /v1/items` (JSON), `GET /rates`
(calls the rates service over HTTP with httpx), `GET /fail` (raises). `python -m
inventory.server` serves it with uvicorn on an OS-chosen port.
"""
