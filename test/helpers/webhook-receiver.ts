/**
 * A real webhook receiver for tests: an HTTP server on 127.0.0.1 that records every callback (headers,
 * raw body, parsed body) and answers what the test scripts, first in first out: a status (with
 * Retry-After), a hang (never answers), or a delay. Unscripted requests get the default (200).
 *
 * It verifies Standard Webhooks signatures with its own implementation (not the service's), and
 * de-duplicates by `webhook-id` as a receiver should: `processed` holds each id answered 2xx once;
 * `duplicates` counts 2xx answers to an id already processed.
 *
 *   const receiver = await startWebhookReceiver({ secret: 'whsec_...' });
 *   receiver.script({ status: 503 }, { status: 503, retryAfter: 1 }, { hang: true });
 *   ... outgoing_url: receiver.url('/alpha') ...
 *   await receiver.waitFor((r) => r.processed.size === 1);
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { createWatchers, listenOnLoopback } from './fake-http';

export interface ReceiverStep {
  /** Answer with this status (default 200). */
  status?: number;
  retryAfter?: number | string;
  /** Never answer (the connection stays open until the service gives up on it, or close()). */
  hang?: true;
  /** Wait this long before answering. */
  delayMs?: number;
}

export interface ReceivedCallback {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  /** Parsed JSON body, or undefined when it is not JSON. */
  body: { message?: unknown; conversation_id?: unknown } | undefined;
  receivedAt: number;
  /** What it was answered: a status, or 'hang'. */
  answered: number | 'hang';
  /** Signature check with the receiver's secret: true/false, or undefined when it has no secret. */
  signatureValid: boolean | undefined;
}

export interface WebhookReceiver {
  readonly port: number;
  url(path?: string): string;
  readonly requests: ReceivedCallback[];
  /** First 2xx-answered callback per webhook-id. */
  readonly processed: Map<string, ReceivedCallback>;
  /** 2xx answers to a webhook-id already processed. */
  duplicates(): number;
  script(...steps: ReceiverStep[]): void;
  setDefault(step: ReceiverStep): void;
  /** Sets (or clears) the secret signatures are checked with. */
  setSecret(secret: string | undefined): void;
  waitFor(predicate: (receiver: WebhookReceiver) => boolean, what?: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Standard Webhooks verification, written independently of src/channels/webhooks/signature.ts. */
export function verifyStandardWebhook(secret: string, headers: http.IncomingHttpHeaders, raw: string, toleranceSeconds = 300): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signature = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.substring(6), 'base64') : Buffer.from(secret, 'utf8');
  const expected = createHmac('sha256', key)
    .update(id + '.' + timestamp + '.' + raw)
    .digest('base64');
  return signature.split(' ').some((candidate) => candidate === 'v1,' + expected);
}

/** Signs like a Standard Webhooks sender would (for requests the tests send to the service). */
export function signStandardWebhook(secret: string, id: string, timestamp: number, raw: string): string {
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.substring(6), 'base64') : Buffer.from(secret, 'utf8');
  return (
    'v1,' +
    createHmac('sha256', key)
      .update(id + '.' + timestamp + '.' + raw)
      .digest('base64')
  );
}

export async function startWebhookReceiver(options: { secret?: string } = {}): Promise<WebhookReceiver> {
  const requests: ReceivedCallback[] = [];
  const processed = new Map<string, ReceivedCallback>();
  const queue: ReceiverStep[] = [];
  const watchers = createWatchers();
  let fallback: ReceiverStep = { status: 200 };
  let secret = options.secret;
  let duplicates = 0;
  const notify = watchers.notify;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: ReceivedCallback['body'];
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const step = queue.length > 0 ? queue.shift()! : fallback;
      const record: ReceivedCallback = {
        path: req.url ?? '',
        headers: req.headers,
        raw,
        body,
        receivedAt: Date.now(),
        answered: step.hang ? 'hang' : (step.status ?? 200),
        signatureValid: secret === undefined ? undefined : verifyStandardWebhook(secret, req.headers, raw),
      };
      requests.push(record);
      if (step.hang) return notify();
      if (step.delayMs) await new Promise((resolve) => setTimeout(resolve, step.delayMs));
      const status = step.status ?? 200;
      const id = String(req.headers['webhook-id'] ?? '');
      if (status >= 200 && status < 300) {
        if (processed.has(id)) duplicates += 1;
        else processed.set(id, record);
      }
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (step.retryAfter !== undefined) headers['retry-after'] = String(step.retryAfter);
      if (!res.destroyed) {
        res.writeHead(status, headers);
        res.end(JSON.stringify({ received: status < 300 }));
      }
      notify();
    });
  });
  const { port, close } = await listenOnLoopback(server);

  const receiver: WebhookReceiver = {
    port,
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    requests,
    processed,
    duplicates: () => duplicates,
    script: (...steps) => void queue.push(...steps),
    setDefault: (step) => void (fallback = step),
    setSecret: (value) => void (secret = value),
    waitFor: (predicate, what = 'receiver condition', timeoutMs = 10_000) =>
      watchers.waitFor(
        () => predicate(receiver),
        timeoutMs,
        () => `webhook receiver: timed out waiting for ${what} (${requests.length} requests seen)`,
      ),
    close,
  };
  return receiver;
}
