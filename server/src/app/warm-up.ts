/**
 * What `cds serve` leaves out of start-up so that it is ready sooner, done as soon as it listens:
 * loading the policy engine (ZEN, a native add-on) and argon2 with its dummy hash, and compiling the
 * route validators and serialisers that no request has needed yet (http/lazy-compilers.ts), the
 * /v1 routes first. Until then each of these is done by the first request that needs it, so
 * nothing waits for the warm-up and nothing depends on it having finished.
 *
 * How it works: one step per turn of the event loop (setImmediate), so a request that arrives
 * meanwhile waits for one step at most (a few milliseconds: one route part's schema) rather than
 * for the whole warm-up. (Not unref'd: an unref'd immediate lets the event loop sleep in its poll
 * phase until some other event arrives, which would stretch the warm-up out by as much.)
 * On a quiet machine it is done within a few hundred milliseconds of ready (docs/performance.md).
 */
import type { LazyCompilers } from '../http/lazy-compilers.js';
import { zenModule } from '../modules/engine/zen.js';
import type { AppContext } from './context.js';

const isV1 = (label: string) => label.includes(' /v1/');

export function warmUpInBackground(ctx: Pick<AppContext, 'accounts'>, compilers: LazyCompilers, onError: (err: unknown) => void): void {
  // Each step does one piece of work and says whether there is more.
  const steps: Array<() => boolean> = [
    () => (zenModule(), false),
    () => compilers.compileNext(isV1) !== null,
    () => compilers.compileNext() !== null,
    () => (ctx.accounts.prepare(), false),
  ];
  const run = () => {
    const step = steps[0];
    if (!step) return;
    try {
      if (!step()) steps.shift();
    } catch (err) {
      // A route part that fails to compile is left to its request (which answers 500); go on.
      onError(err);
    }
    setImmediate(run);
  };
  setImmediate(run);
}
