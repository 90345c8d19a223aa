import { ServiceError } from '../protocol';

/** How long a client accepted while the service opens waits for it (the store's open: seconds on a slow disk). */
export const OPENING_WAIT_MS = 30_000;

/** What a client that waited is told when the open failed: the cause (paths, SQLite's text) is in the log and on the host's screen. */
export const OPEN_FAILED_TEXT = 'the service could not open its data directory; see its log';
/** What a client is told when the open outlasted its wait. */
export const STILL_OPENING_TEXT = 'the service is still opening its data directory; try again shortly';

/**
 * The service's open (the store and what is built on it) as the parts that serve before it see it: the
 * service listens and takes sessions once its data directory is locked, and what needs the store
 * waits here. One promise, no polling; every waiter is answered: with the opened value, or with a
 * ServiceError (`server_error`) when the open failed or did not end within the wait.
 */
export class Opening<T> {
  private opened: T | undefined;
  private failure: Error | undefined;
  private readonly settled: Promise<T>;

  constructor(
    promise: Promise<T>,
    private readonly waitMs = OPENING_WAIT_MS,
  ) {
    this.settled = promise.then(
      (value) => (this.opened = value),
      (error: Error) => {
        this.failure = error;
        throw error;
      },
    );
    // Waiters and the host each handle the failure; this copy must not count as unhandled.
    this.settled.catch(() => undefined);
  }

  /** The opened value, once there (undefined while opening, and after a failure). */
  get current(): T | undefined {
    return this.opened;
  }

  /** Where the open is: what `GET /health` says of it. */
  get state(): 'opening' | 'open' | 'failed' {
    return this.opened !== undefined ? 'open' : this.failure ? 'failed' : 'opening';
  }

  /** Resolves or rejects as the open itself does (the host's own wait: the error as it was thrown). */
  get done(): Promise<T> {
    return this.settled;
  }

  /** The opened value, waited for at most the wait; rejects with a client's error (see the texts above). */
  wait(): Promise<T> {
    if (this.opened !== undefined) return Promise.resolve(this.opened);
    if (this.failure) return Promise.reject(new ServiceError('server_error', OPEN_FAILED_TEXT));
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new ServiceError('server_error', STILL_OPENING_TEXT, 1)), this.waitMs);
      this.settled.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        () => {
          clearTimeout(timer);
          reject(new ServiceError('server_error', OPEN_FAILED_TEXT));
        },
      );
    });
  }
}
