/**
 * `client.events`: the event history (GET /v1/events, GET /v1/events/{event_id}), the way to
 * recover what a webhook receiver missed. `list()` can be awaited for one page, or iterated with
 * `for await` to walk every page (newest first) without handling cursors:
 *
 *   for await (const event of client.events.list({ created_gte: outageStart })) reconcile(event);
 *
 * Auto-pagination asks for the next page only when the current one is used up, passing the page's
 * `next_cursor` as `starting_after`; a GET is retried on connection errors and 5xx like every call.
 *
 * Events are `Event` (`data` a plain record) unless a type argument says otherwise: with
 * `list<TypedEvent>()` / `retrieve<TypedEvent>(id)` they are a union on `type` whose `data` narrows
 * (`TypedEvent<'decision.finalized' | 'decision.adjusted'>` for the types you asked for). Like
 * `webhooks.verify<TData>()`, that is an assertion: `data` is not checked at runtime.
 */
import type { HttpCore, RequestOptions, ResponseMeta } from '../core/http.js';
import type { Event, EventListData, EventListParams } from '../types.js';

/** What an event type argument must be: `Event` (the default), `TypedEvent`, or `Event<YourData>`. */
type AnyEvent = Event<unknown>;

export type EventRequestOptions = Omit<RequestOptions, 'idempotencyKey'>;

function unixSeconds(value: Date | number, name: string): string {
  const seconds = value instanceof Date ? Math.floor(value.getTime() / 1000) : value;
  if (!Number.isInteger(seconds) || seconds < 0) throw new TypeError(`events.list: \`${name}\` must be a Date or whole unix seconds.`);
  return String(seconds);
}

export function eventListQuery(params: EventListParams): string {
  const q = new URLSearchParams();
  if (params.limit !== undefined) q.set('limit', String(params.limit));
  if (params.type !== undefined) q.set('type', (typeof params.type === 'string' ? [params.type] : [...params.type]).join(','));
  if (params.created_gte !== undefined) q.set('created_gte', unixSeconds(params.created_gte, 'created_gte'));
  if (params.created_lt !== undefined) q.set('created_lt', unixSeconds(params.created_lt, 'created_lt'));
  if (params.starting_after !== undefined) q.set('starting_after', params.starting_after);
  const text = q.toString();
  return text === '' ? '' : `?${text}`;
}

/** One page of events, newest first. */
export class EventPage<TEvent extends AnyEvent = Event> {
  readonly data: TEvent[];
  readonly has_more: boolean;
  readonly next_cursor: string | null;
  /** Status, headers and request id of the response that carried this page. */
  readonly lastResponse: ResponseMeta;

  constructor(
    body: EventListData<TEvent>,
    meta: ResponseMeta,
    private readonly params: EventListParams,
    private readonly fetchPage: (params: EventListParams) => Promise<EventPage<TEvent>>,
  ) {
    this.data = body.data;
    this.has_more = body.has_more;
    this.next_cursor = body.next_cursor;
    this.lastResponse = meta;
  }

  hasNextPage(): boolean {
    return this.has_more && this.next_cursor !== null;
  }

  /** The next (older) page; throws when there is none (check `hasNextPage()`). */
  async getNextPage(): Promise<EventPage<TEvent>> {
    if (!this.hasNextPage()) throw new Error('No next page: has_more is false.');
    return this.fetchPage({ ...this.params, starting_after: this.next_cursor! });
  }

  /** Every event of this page and the pages after it. */
  [Symbol.asyncIterator](): AsyncIterator<TEvent> {
    return eventsFrom(this);
  }
}

/** The events of `first` and of every page after it; the next page is fetched only when one is used up. */
async function* eventsFrom<TEvent extends AnyEvent>(first: EventPage<TEvent>): AsyncGenerator<TEvent> {
  let page = first;
  for (;;) {
    yield* page.data;
    if (!page.hasNextPage()) return;
    page = await page.getNextPage();
  }
}

/**
 * What `list()` returns: a promise of the first page that is also an async iterable over every
 * event of every page.
 */
export class EventPagePromise<TEvent extends AnyEvent = Event> implements PromiseLike<EventPage<TEvent>>, AsyncIterable<TEvent> {
  private first: Promise<EventPage<TEvent>> | null = null;
  constructor(private readonly load: () => Promise<EventPage<TEvent>>) {}

  private page(): Promise<EventPage<TEvent>> {
    this.first ??= this.load();
    return this.first;
  }

  then<A = EventPage<TEvent>, B = never>(onFulfilled?: ((page: EventPage<TEvent>) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    return this.page().then(onFulfilled, onRejected);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<TEvent> {
    yield* await this.page();
  }

  /** Every matching event, all pages, into one array (mind the size: up to 30 days of events). */
  async toArray(): Promise<TEvent[]> {
    const out: TEvent[] = [];
    for await (const event of this) out.push(event);
    return out;
  }
}

export class Events {
  constructor(private readonly core: HttpCore) {}

  /**
   * Events of this key's tenant and environment from the last 30 days, newest first.
   * `list<TypedEvent>(…)` types them as a union whose `data` narrows on `type`.
   */
  list<TEvent extends AnyEvent = Event>(params: EventListParams = {}, options: EventRequestOptions = {}): EventPagePromise<TEvent> {
    const fetchPage = async (p: EventListParams): Promise<EventPage<TEvent>> => {
      const { data, meta } = await this.core.request<EventListData<TEvent>>('GET', `/v1/events${eventListQuery(p)}`, undefined, options);
      return new EventPage(data, meta, p, fetchPage);
    };
    return new EventPagePromise(() => fetchPage(params));
  }

  /**
   * One event by id (the webhook's `Svc-Webhook-Id`); NotFoundError when unknown or older than 30 days.
   * `retrieve<TypedEvent>(id)` types it as a union whose `data` narrows on `type`.
   */
  async retrieve<TEvent extends AnyEvent = Event>(eventId: string, options: EventRequestOptions = {}): Promise<TEvent> {
    const { data } = await this.core.request<TEvent>('GET', `/v1/events/${encodeURIComponent(eventId)}`, undefined, options);
    return data;
  }
}
