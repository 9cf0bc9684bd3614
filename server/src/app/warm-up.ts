/**
 * What `cds serve` leaves out of start-up so that it is ready sooner, done once it listens and has
 * nothing else to do: compiling the route validators and serialisers that no request has needed
 * yet (http/lazy-compilers.ts; the /v1 routes first), then argon2 with its dummy hash. Whatever
 * the warm-up has not done yet, the first request that needs it does itself (a few milliseconds
 * for one route's schemas), so nothing waits for the warm-up or depends on it finishing. What
 * every first decision needs (the Ajv instance, the policy engine) is made before listening.
 *
 * How it works: one step per turn of the event loop (setImmediate), and only while no request is
 * in flight: the HTTP server's requests are counted (a listener that exists only during the
 * warm-up) and a step is taken only at zero, else the next step waits for the last response in
 * flight to finish. A request that arrives during a step waits for that one step (a few
 * milliseconds: one route part's schema); the warm-up never runs between the steps of a request.
 * (Immediates, not unref'd ones: an unref'd immediate lets the event loop sleep in its poll phase
 * until some other event arrives, which would stall the warm-up for as long.)
 */
import type { EventEmitter } from 'node:events';
import type { LazyCompilers } from '../http/lazy-compilers.js';
import type { AppContext } from './context.js';

const isV1 = (label: string) => label.includes(' /v1/');

export interface WarmUpOptions {
  ctx: Pick<AppContext, 'accounts'>;
  compilers: LazyCompilers;
  /** The listening HTTP(S) server, whose requests in flight pause the warm-up ('request' events). */
  server: Pick<EventEmitter, 'on' | 'off'>;
  onError(err: unknown): void;
  /** Called once everything is done (tests). */
  onDone?(): void;
}

export function warmUpInBackground(options: WarmUpOptions): void {
  const { ctx, compilers, server } = options;
  // Each step does one piece of work and says whether it has more.
  const steps: Array<() => boolean> = [
    () => compilers.compileNext(isV1) !== null,
    () => compilers.compileNext() !== null,
    () => (ctx.accounts.prepare(), false),
  ];
  let inFlight = 0;
  let waiting = false; // a step is due once inFlight is back to zero
  const onRequest = (_request: unknown, response: { once(event: 'close', listener: () => void): unknown }) => {
    inFlight++;
    response.once('close', () => {
      inFlight--;
      if (inFlight === 0 && waiting) {
        waiting = false;
        setImmediate(warmUpStep);
      }
    });
  };
  server.on('request', onRequest);

  function warmUpStep(): void {
    if (inFlight > 0) {
      waiting = true;
      return;
    }
    const step = steps[0];
    if (!step) {
      server.off('request', onRequest);
      options.onDone?.();
      return;
    }
    try {
      if (!step()) steps.shift();
    } catch (err) {
      // A route part that fails to compile is left to its request (which answers 500); go on.
      options.onError(err);
    }
    setImmediate(warmUpStep);
  }
  setImmediate(warmUpStep);
}
