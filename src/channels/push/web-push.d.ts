// web-push 3.6.7 ships no types: what the push sender uses of it (node_modules/web-push/src).
declare module 'web-push' {
  import type { Agent } from 'node:https';

  export interface PushSubscription {
    endpoint: string;
    keys: { p256dh: string; auth: string };
  }

  export interface RequestOptions {
    vapidDetails: { subject: string; publicKey: string; privateKey: string };
    /** Seconds the push service keeps the message for an offline device. */
    TTL: number;
    urgency?: 'very-low' | 'low' | 'normal' | 'high';
    /** At most 32 URL-safe base64 characters: a later message with the same topic replaces an undelivered one. */
    topic?: string;
    agent?: Agent;
    /** Socket timeout in ms. */
    timeout?: number;
    contentEncoding?: 'aes128gcm';
  }

  export interface SendResult {
    statusCode: number;
    body: string;
    headers: Record<string, string | string[] | undefined>;
  }

  /** What sendNotification would send: the request, VAPID-signed and encrypted (web-push-lib.js generateRequestDetails). */
  export interface RequestDetails {
    method: string;
    headers: Record<string, string | number>;
    body: Buffer | null;
    endpoint: string;
  }

  export class WebPushError extends Error {
    constructor(message: string, statusCode: number, headers: Record<string, string | string[] | undefined>, body: string, endpoint: string);
    statusCode: number;
    headers: Record<string, string | string[] | undefined>;
    body: string;
    endpoint: string;
  }

  export function sendNotification(subscription: PushSubscription, payload: string | Buffer, options: RequestOptions): Promise<SendResult>;
  export function generateRequestDetails(subscription: PushSubscription, payload: string | Buffer, options: RequestOptions): RequestDetails;
  export function generateVAPIDKeys(): { publicKey: string; privateKey: string };

  const webPush: {
    sendNotification: typeof sendNotification;
    generateRequestDetails: typeof generateRequestDetails;
    generateVAPIDKeys: typeof generateVAPIDKeys;
    WebPushError: typeof WebPushError;
  };
  export default webPush;
}
