/**
 * ZEN (@gorules/zen-engine), loaded when a policy is first compiled or validated rather than when
 * a module imports it: it is a native add-on, and most CLI commands (migrate, tenants create,
 * webhooks create) and many tests never evaluate a policy. `cds serve` loads it before it
 * listens, so a first decision does not wait for it.
 */
import { createRequire } from 'node:module';
import type * as ZenModule from '@gorules/zen-engine';

let zen: typeof ZenModule | undefined;

export function zenModule(): typeof ZenModule {
  zen ??= createRequire(import.meta.url)('@gorules/zen-engine') as typeof ZenModule;
  return zen;
}
