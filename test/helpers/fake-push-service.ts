/**
 * A fake Web Push service (docs/protocol.md, "Web Push"; /work recipe: the browser vendor's push service
 * replaced by a local one): an HTTPS server on 127.0.0.1 with a self-signed certificate made at start by
 * `openssl`, as the service's `web-push` speaks only HTTPS. It records every push, checks its VAPID JWT
 * (aud, exp, sub, and the ES256 signature against the key the test names) and decrypts the RFC 8291 body
 * with the keys of the subscription, which the test made as a browser does (`subscription()`).
 * Answers are scripted first in first out per call (status), default 201.
 *
 *   const push = await startFakePushService();
 *   const sub = push.subscription();               // { endpoint, keys } for push_subscribe
 *   push.script(503, 201);                         // next two answers
 *   await push.waitFor((p) => p.received.length === 1);
 *   push.received[0].payload                       // decrypted JSON
 */
import { createECDH, createPublicKey, randomBytes, randomUUID, verify, type ECDH } from 'node:crypto';
import https from 'node:https';
import type http from 'node:http';
import * as ece from 'http_ece';
import { createWatchers, listenOnLoopback, onBodyBytes } from './fake-http';
import { selfSignedCertificate } from './self-signed';
import { tempDir } from './temp';

export interface BrowserSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface ReceivedPush {
  /** The subscription's id (last path segment of its endpoint). */
  id: string;
  headers: http.IncomingHttpHeaders;
  ttl: number;
  urgency: string | undefined;
  topic: string | undefined;
  jwt: { header: Record<string, unknown>; claims: { aud?: string; exp?: number; sub?: string }; signatureValid: boolean; key: string };
  /** The decrypted body parsed as JSON (undefined when it did not decrypt or parse). */
  payload: Record<string, unknown> | undefined;
  answered: number;
  receivedAt: number;
}

export interface FakePushService {
  readonly origin: string;
  /** The certificate to trust (`new https.Agent({ ca })`). */
  readonly ca: Buffer;
  readonly received: ReceivedPush[];
  /** Every POST, decrypted or not, including those answered with an error status. */
  readonly attempts: number;
  /** A new subscription as a browser makes it: its own P-256 key pair and 16-byte auth secret. */
  subscription(): BrowserSubscription;
  /** Answers of the next calls, in order (then 201). */
  script(...statuses: number[]): void;
  /**
   * A hostile endpoint: the next call is answered 201 with a body that never ends (`limitBytes` sent as
   * fast as the client reads, then the answer is held open). `endless.sent` counts the bytes written,
   * `endless.closed` turns true once the client let the connection go.
   */
  answerEndlessly(limitBytes?: number): void;
  readonly endless: { sent: number; closed: boolean };
  waitFor(predicate: (push: FakePushService) => boolean, what?: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function base64urlJson(part: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** RFC 8292: `vapid t=<jwt>, k=<public key>`; the signature checked against `k` as an uncompressed P-256 point. */
function readVapid(authorization: string | undefined): ReceivedPush['jwt'] {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization ?? '');
  if (!match) return { header: {}, claims: {}, signatureValid: false, key: '' };
  const [, token, key] = match;
  const [header, claims, signature] = token.split('.');
  const point = Buffer.from(key, 'base64url');
  const jwk = { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33, 65).toString('base64url') };
  let signatureValid = false;
  try {
    signatureValid = verify('sha256', Buffer.from(`${header}.${claims}`), { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  } catch {
    signatureValid = false;
  }
  return { header: base64urlJson(header), claims: base64urlJson(claims), signatureValid, key };
}

/** A 201 whose body goes on until `limit` bytes, then stays open: only the client's closing ends it. */
function streamForever(res: http.ServerResponse, state: { limit: number; sent: number; closed: boolean }, changed: () => void): void {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  res.on('close', () => {
    state.closed = true;
    changed();
  });
  res.writeHead(201, { 'content-type': 'text/plain' });
  const pump = () => {
    while (state.sent < state.limit && !res.destroyed) {
      state.sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
  };
  pump();
}

export async function startFakePushService(): Promise<FakePushService> {
  const certDir = await tempDir('ra-fake-push-');
  const { key, cert: ca } = selfSignedCertificate(certDir.dir);
  const subscriptions = new Map<string, { ecdh: ECDH; auth: Buffer }>();
  const received: ReceivedPush[] = [];
  const scripted: number[] = [];
  const watchers = createWatchers();
  const endless = { pending: false, limit: 0, sent: 0, closed: false };
  let attempts = 0;

  const server = https.createServer({ key, cert: ca }, (req, res) => {
    onBodyBytes(req, (body) => {
      attempts += 1;
      const id = (req.url ?? '').split('/').pop() ?? '';
      const answered = scripted.shift() ?? 201;
      const keys = subscriptions.get(id);
      let payload: Record<string, unknown> | undefined;
      try {
        if (keys) payload = JSON.parse(ece.decrypt(body, { version: 'aes128gcm', privateKey: keys.ecdh, authSecret: keys.auth }).toString('utf8')) as Record<string, unknown>;
      } catch {
        payload = undefined;
      }
      received.push({
        id,
        headers: req.headers,
        ttl: Number(req.headers.ttl),
        urgency: req.headers.urgency as string | undefined,
        topic: req.headers.topic as string | undefined,
        jwt: readVapid(req.headers.authorization),
        payload,
        answered,
        receivedAt: performance.now(),
      });
      if (endless.pending) {
        endless.pending = false;
        streamForever(res, endless, () => watchers.notify());
        watchers.notify();
        return;
      }
      res.writeHead(answered).end();
      watchers.notify();
    });
  });
  const listening = await listenOnLoopback(server as unknown as http.Server);
  const origin = `https://127.0.0.1:${listening.port}`;

  const service: FakePushService = {
    origin,
    ca,
    received,
    get attempts() {
      return attempts;
    },
    subscription() {
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = randomBytes(16);
      const id = randomUUID();
      subscriptions.set(id, { ecdh, auth });
      return { endpoint: `${origin}/push/${id}`, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } };
    },
    script(...statuses) {
      scripted.push(...statuses);
    },
    answerEndlessly(limitBytes = 32 * 1024 * 1024) {
      Object.assign(endless, { pending: true, limit: limitBytes, sent: 0, closed: false });
    },
    get endless() {
      return { sent: endless.sent, closed: endless.closed };
    },
    waitFor(predicate, what = 'the pushes', timeoutMs = 10_000) {
      return watchers.waitFor(
        () => predicate(service),
        timeoutMs,
        () => `timed out waiting for ${what} (${received.length} received)`,
      );
    },
    async close() {
      await listening.close();
      await certDir.cleanup();
    },
  };
  return service;
}
