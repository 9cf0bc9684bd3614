/**
 * ZEN (@gorules/zen-engine), loaded when a policy is first compiled or validated rather than when
 * the process starts: it is a native add-on whose loading was a noticeable part of start-up, and
 * most CLI commands, and a server until its first decision, never evaluate a policy. `cds serve`
 * loads it right after it listens (app/warm-up.ts), so a first decision does not wait for it.
 */
import { createRequire } from 'node:module';
import type * as ZenModule from '@gorules/zen-engine';

let zen: typeof ZenModule | undefined;

export function zenModule(): typeof ZenModule {
  zen ??= createRequire(import.meta.url)('@gorules/zen-engine') as typeof ZenModule;
  return zen;
}
