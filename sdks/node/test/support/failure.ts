import { expect } from 'vitest';
import { CreditDecisionsError } from '../../src/index.js';

/** The error a call fails with, checked to be one of ours with a request id (in the error, its headers and its body). */
export async function failure(promise: Promise<unknown>): Promise<CreditDecisionsError> {
  const e = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(CreditDecisionsError);
  const error = e as CreditDecisionsError;
  expect(error.requestId).toMatch(/^req_/);
  expect(error.headers['request-id']).toBe(error.requestId);
  expect(error.body).toEqual({ error: error.code, message: error.message, request_id: error.requestId });
  return error;
}
