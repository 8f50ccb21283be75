// What a call that must fail with an SvcError failed with: its code, message and param, for one exact assertion.
import { expect } from 'vitest';

import { SvcError } from '../../src/errors.js';

/** Awaits `work`, expects it to reject with an SvcError, and returns the error's code, message and param (or null). */
export async function refusal(work: Promise<unknown>): Promise<{ code: string; message: string; param: string | null }> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SvcError);
  const { code, message, param } = error as SvcError;
  return { code, message, param: param ?? null };
}
