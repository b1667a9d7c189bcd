"""Client of the pricing service: asks it for a quote over HTTP (requests)."""

from __future__ import annotations

import logging

import requests

log = logging.getLogger("shop.pricing")


class PricingError(Exception):
    """The pricing service did not give a usable quote."""


class PricingClient:
    def __init__(self, base_url: str, timeout: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()

    def quote(self, product_id: int, quantity: int, unit_cents: int) -> int:
        """Total in cents for `quantity` units, discounts applied by the pricing service."""
        try:
            response = self.session.get(
                f"{self.base_url}/quote",
                params={"product_id": product_id, "quantity": quantity, "unit_cents": unit_cents},
                headers={"Accept": "application/json"},
                timeout=self.timeout,
            )
        except requests.RequestException as exc:
            log.error("pricing service unreachable: %s", exc)
            raise PricingError("pricing service unreachable") from exc
        if response.status_code != 200:
            log.warning("pricing service answered %s", response.status_code)
            raise PricingError(f"pricing service answered {response.status_code}")
        total = int(response.json()["total_cents"])
        log.info("quote for product %s x%s: %s cents", product_id, quantity, total)
        return total
