import type { StoreBackend } from '../db/backend.js';
import { describeError, StoreUnavailableError } from '../errors.js';

const TRANSIENT_CONFLICT_RETRIES = 3;

/**
 * How the store meets its database's errors: one that says the database cannot be reached becomes a
 * StoreUnavailableError (the provider gets a 503 and retries), and a deadlock or lock timeout, which
 * rolled the whole transaction back, runs it again.
 */
export class DatabaseErrors {
  constructor(private readonly backend: StoreBackend) {}

  isUnavailable(error: unknown): boolean {
    return error instanceof StoreUnavailableError || this.backend.isUnavailable(error);
  }

  translate(error: unknown): unknown {
    if (this.backend.isUnavailable(error)) return new StoreUnavailableError(`database unavailable: ${describeError(error)}`, { cause: error });
    return error;
  }

  async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw this.translate(error);
    }
  }

  /** Runs `operation` again after a deadlock or lock timeout: it rolled back whole, so running it again is safe. */
  async withConflictRetries<T>(operation: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await operation();
      } catch (error) {
        if (attempt < TRANSIENT_CONFLICT_RETRIES && this.backend.isTransientConflict(error)) continue;
        throw this.translate(error);
      }
    }
  }
}
