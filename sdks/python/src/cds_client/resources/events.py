"""``client.events``: the event history (GET /v1/events, GET /v1/events/{event_id}), the way to
recover what a webhook receiver missed.

``list()`` returns one :class:`EventPage` (newest first). Iterating the page gives its own events;
``auto_paging_iter()`` gives every event of this page and of the pages after it, asking for the
next page only when the current one is used up (its ``next_cursor`` sent as ``starting_after``)::

    for event in client.events.list(created_gte=outage_start).auto_paging_iter():
        reconcile(event)
"""
import datetime
import threading
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .._core.http import HttpCore, ResponseMeta
from ..types import Event

TimeParam = Union[int, datetime.datetime]


def _unix_seconds(value: TimeParam, name: str) -> str:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise TypeError(f"events.list: {name} must be a timezone-aware datetime (or unix seconds)")
        return str(int(value.timestamp()))
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"events.list: {name} must be a datetime or whole unix seconds")
    return str(value)


def event_list_query(params: Dict[str, Any]) -> str:
    query: List[Tuple[str, str]] = []
    if params.get("limit") is not None:
        query.append(("limit", str(params["limit"])))
    types = params.get("type")
    if types is not None:
        query.append(("type", types if isinstance(types, str) else ",".join(types)))
    for name in ("created_gte", "created_lt"):
        if params.get(name) is not None:
            query.append((name, _unix_seconds(params[name], name)))
    if params.get("starting_after") is not None:
        query.append(("starting_after", params["starting_after"]))
    return ("?" + urllib.parse.urlencode(query)) if query else ""


class EventPage:
    """One page of events, newest first: ``data``, ``has_more``, ``next_cursor``."""

    def __init__(self, body: Dict[str, Any], meta: ResponseMeta, params: Dict[str, Any], events: "Events") -> None:
        self.data: List[Event] = body["data"]
        self.has_more: bool = body["has_more"]
        self.next_cursor: Optional[str] = body["next_cursor"]
        #: Status, headers and request id of the response that carried this page.
        self.last_response = meta
        self._params = params
        self._events = events

    def __iter__(self) -> Iterator[Event]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def has_next_page(self) -> bool:
        return self.has_more and self.next_cursor is not None

    def get_next_page(self) -> "EventPage":
        """The next (older) page; ``ValueError`` when there is none (check ``has_next_page()``)."""
        if not self.has_next_page():
            raise ValueError("No next page: has_more is false.")
        # The same filters and request options as this page, from its cursor: list() again.
        params = self._params
        return self._events.list(
            limit=params.get("limit"),
            type=params.get("type"),
            created_gte=params.get("created_gte"),
            created_lt=params.get("created_lt"),
            starting_after=self.next_cursor,
            **params.get("_options", {}),
        )

    def auto_paging_iter(self) -> Iterator[Event]:
        """Every event of this page and of every page after it."""
        page: EventPage = self
        while True:
            for event in page.data:
                yield event
            if not page.has_next_page():
                return
            page = page.get_next_page()


class Events:
    def __init__(self, core: HttpCore) -> None:
        self._core = core

    def _page(self, params: Dict[str, Any]) -> EventPage:
        # "_options" (time-out, retries, cancel) rides along so every page of a walk uses the same.
        request_options = params.get("_options", {})
        data, meta = self._core.request("GET", "/v1/events" + event_list_query(params), **request_options)
        return EventPage(data, meta, params, self)

    def list(
        self,
        *,
        limit: Optional[int] = None,
        type: Optional[Union[str, Sequence[str]]] = None,
        created_gte: Optional[TimeParam] = None,
        created_lt: Optional[TimeParam] = None,
        starting_after: Optional[str] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        retry_rate_limited: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
    ) -> EventPage:
        """Events of this key's tenant and environment from the last 30 days, newest first.

        ``limit`` 1-100 (20); ``type`` one event type or a list; ``created_gte`` / ``created_lt`` a
        timezone-aware datetime or unix seconds (``created_lt`` exclusive); ``starting_after`` a
        previous page's ``next_cursor``.
        """
        options = {"timeout": timeout, "max_retries": max_retries, "retry_rate_limited": retry_rate_limited, "cancel": cancel}
        params: Dict[str, Any] = {
            "limit": limit,
            "type": type,
            "created_gte": created_gte,
            "created_lt": created_lt,
            "starting_after": starting_after,
            "_options": options,
        }
        return self._page(params)

    def retrieve(
        self,
        event_id: str,
        *,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        retry_rate_limited: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
    ) -> Event:
        """One event by id (the webhook's ``Svc-Webhook-Id``); ``NotFoundError`` when it is not in
        the key's tenant and environment or is older than 30 days."""
        path = f"/v1/events/{urllib.parse.quote(event_id, safe='')}"
        data, _meta = self._core.request(
            "GET", path, timeout=timeout, max_retries=max_retries, retry_rate_limited=retry_rate_limited, cancel=cancel
        )
        return data  # type: ignore[no-any-return]
