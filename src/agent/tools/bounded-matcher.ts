import { Worker } from 'node:worker_threads';
import { ToolError } from './types';

/**
 * Regular expressions from the model (search patterns, globs) run on a worker thread under a time
 * limit. JavaScript's engine backtracks: `(a+)+$` against a line of `a`s takes time doubling with each
 * character, and on the service's own thread that would stall every socket. The worker is ended
 * (terminate stops it even mid-match) when the time is up or the call is cancelled.
 *
 * The worker is plain JavaScript evaluated from this string, so it needs no bundle entry of its own.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const line = new RegExp(workerData.line.source, workerData.line.flags);
const name = workerData.name ? new RegExp(workerData.name.source, workerData.name.flags) : undefined;
parentPort.on('message', (request) => {
  if (request.op === 'names') {
    parentPort.postMessage(request.names.map((n) => name === undefined || name.test(n)));
    return;
  }
  const lines = request.text.split(/\\r?\\n/);
  const found = [];
  let more = false;
  for (let i = 0; i < lines.length; i++) {
    if (!line.test(lines[i])) continue;
    if (found.length >= request.max) { more = true; break; }
    found.push(i);
  }
  parentPort.postMessage({ found, more });
});
`;

export interface RegexSource {
  source: string;
  flags: string;
}

export interface MatchedLines {
  /** 0-based indexes of the matching lines (split on `\n` or `\r\n`), at most `max`. */
  found: number[];
  /** More lines matched than `max`. */
  more: boolean;
}

export class BoundedMatcher {
  private readonly worker: Worker;
  private spentMs = 0;
  private closed = false;

  /**
   * @param line tested against each line of a text
   * @param name tested against names (a glob's regular expression); without it every name matches
   * @param limitMs the time the worker may spend matching, over all calls together
   */
  constructor(
    line: RegexSource,
    name: RegexSource | undefined,
    private readonly limitMs: number,
    private readonly signal: AbortSignal,
  ) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { line, name } });
    this.worker.unref();
  }

  /** For each name, whether it matches the name expression. */
  matchingNames(names: string[]): Promise<boolean[]> {
    return this.ask<boolean[]>({ op: 'names', names });
  }

  /** The lines of `text` that match the line expression. */
  matchingLines(text: string, max: number): Promise<MatchedLines> {
    return this.ask<MatchedLines>({ op: 'lines', text, max });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.worker.terminate();
  }

  private ask<T>(request: unknown): Promise<T> {
    if (this.closed) return Promise.reject(new ToolError('the matcher is closed'));
    const started = performance.now();
    return new Promise<T>((resolve, reject) => {
      const done = (settle: () => void) => {
        clearTimeout(timer);
        this.signal.removeEventListener('abort', onAbort);
        this.worker.off('message', onMessage);
        this.worker.off('error', onError);
        this.spentMs += performance.now() - started;
        settle();
      };
      const fail = (error: Error) =>
        done(() => {
          void this.close();
          reject(error);
        });
      const onMessage = (value: T) => done(() => resolve(value));
      const onError = (error: Error) => fail(new ToolError(`the pattern could not be matched: ${error.message}`));
      const onAbort = () => fail(new ToolError('cancelled'));
      const timer = setTimeout(
        () =>
          fail(
            new ToolError(
              `the pattern took more than ${this.limitMs / 1000} s to match and was stopped; it likely backtracks ` +
                '(nested repetition such as (a+)+ or (a|a)*); simplify it, or search for plain text',
            ),
          ),
        Math.max(0, this.limitMs - this.spentMs),
      );
      if (this.signal.aborted) {
        onAbort();
        return;
      }
      this.signal.addEventListener('abort', onAbort, { once: true });
      this.worker.on('message', onMessage);
      this.worker.on('error', onError);
      this.worker.postMessage(request);
    });
  }
}
