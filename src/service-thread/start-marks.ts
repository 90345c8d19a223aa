// The service thread's start, step by step, for the editor's log: what its activation (activate() ->
// listening) was made of. Kept apart from wire.ts so that the thread's small loader (thread-loader.ts) reads
// the clock without the wire's imports.

/**
 * When the thread's start reached each step, in ms of the shared wall clock (`performance.timeOrigin +
 * performance.now()`, alike on both threads): told with `started`, for the editor's log (its activation's parts).
 */
export interface StartMarks {
  /** The thread's loader began (the thread is up). */
  loader: number;
  /** Its bundle compiled (with the code cache when there was one: `cached`). */
  compiled: number;
  cached: boolean;
  /** Its bundle's modules loaded. */
  loaded: number;
  /** service.json read, the lock held. */
  begun: number;
  listening: number;
}

/** Now in the clock StartMarks use. */
export const wallNow = (): number => performance.timeOrigin + performance.now();

/** What the loader measured before the service's own start (the rest is the service thread's). */
export type LoaderMarks = Pick<StartMarks, 'loader' | 'compiled' | 'cached' | 'loaded'>;

/** The steps, in ms after `from` (when the editor asked for the thread), as the log shows them. */
export function describeStart(marks: StartMarks, from: number): string {
  // A thread started ahead (early-thread.ts) was up before the hosting asked: its mark is negative.
  const at = (mark: number) => `${mark < from ? '-' : '+'}${Math.abs(Math.round(mark - from))}`;
  return `thread up ${at(marks.loader)}, compiled ${at(marks.compiled)}${marks.cached ? ' (code cache)' : ''}, loaded ${at(marks.loaded)}, locked ${at(marks.begun)}, listening ${at(marks.listening)} ms`;
}
