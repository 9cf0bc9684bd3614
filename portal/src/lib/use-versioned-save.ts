import { useState } from 'react';
import type { ApiError } from './api-client';

/**
 * The state of a form that saves over the version it loaded (webhook endpoints, dealers, notice
 * settings): whether it is busy, the failure to show, and the conflict. A 409 with `conflictCode`
 * means someone else saved first and nothing was written: the form shows the service's message
 * (which names who) with a Reload in place of Save (`ConflictNotice`), since the same save would be
 * refused again.
 */
export function useVersionedSave(conflictCode: string) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [conflict, setConflict] = useState<string | null>(null);

  /** Runs `write`; a conflict or any other failure is kept for the form to show. */
  const save = async (write: () => Promise<void>): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await write();
    } catch (err) {
      const failure = err as ApiError;
      if (failure.code === conflictCode) setConflict(failure.message);
      else setError(failure);
    } finally {
      setBusy(false);
    }
  };

  /** Runs `read`, which puts what the other person saved into the form; the conflict ends with it. */
  const reload = async (read: () => Promise<void>): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await read();
      setConflict(null);
    } catch (err) {
      setError(err as ApiError);
    } finally {
      setBusy(false);
    }
  };

  return { busy, error, conflict, save, reload };
}
