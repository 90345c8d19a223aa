import * as z from 'zod';
import { command, listLimit, nonEmpty } from './command-frame';
import { lazySchema } from './lazy-schema';

/**
 * The webhook channel (docs/protocol.md, "Webhook channel"): the bodies an external system posts and
 * receives, and the outbox's deliveries as the owner lists and retries them.
 */

/** Body of `POST <incoming_path>` (service-spec 4.5). */
export const WebhookIncomingBody = lazySchema(() =>
  z.object({
    message: z.string({ error: 'message must be a string' }).min(1, { error: 'message must not be empty' }),
    user_id: z.string({ error: 'user_id must be a string' }).optional(),
    conversation_id: z.string({ error: 'conversation_id must be a string' }).min(1).optional(),
  }),
);
export type WebhookIncomingBody = z.infer<typeof WebhookIncomingBody>;

/** Body the service POSTs to `outgoing_url`. */
export const WebhookOutgoingBody = lazySchema(() => z.object({ message: z.string(), conversation_id: z.string() }));
export type WebhookOutgoingBody = z.infer<typeof WebhookOutgoingBody>;

/**
 * Body POSTed to `outgoing_url` instead of a reply when an accepted message cannot be answered (the
 * provider refused it, or kept failing for the account's retry window). `message_id` is the incoming one.
 */
export const WebhookErrorBody = lazySchema(() =>
  z.object({
    status: z.literal('error'),
    /** Present for a refusal a sender may act on: `budget_exceeded` (the account's daily budget is spent). */
    code: z.string().optional(),
    error: z.string(),
    conversation_id: z.string(),
    message_id: z.string(),
  }),
);
export type WebhookErrorBody = z.infer<typeof WebhookErrorBody>;

// ---- The outbox ----
export const DeliveryStatus = lazySchema(() => z.enum(['pending', 'delivered', 'failed']));
export type DeliveryStatus = z.infer<typeof DeliveryStatus>;

/** Outgoing webhook deliveries, newest first. */
export const ListDeliveriesCommand = lazySchema(() =>
  command('list_deliveries', {
    account: nonEmpty('account').optional(),
    status: DeliveryStatus.optional(),
    limit: listLimit,
  }),
);

/** Sends a failed (or still pending) delivery again now, with a fresh retry window. */
export const RetryDeliveryCommand = lazySchema(() =>
  command('retry_delivery', {
    delivery_id: nonEmpty('delivery_id'),
  }),
);

/** An element of list_deliveries. `receiver` is the URL's origin only: a path or query may hold a token. */
export const Delivery = lazySchema(() =>
  z.object({
    id: z.string(),
    account: z.string(),
    receiver: z.string(),
    conversation_id: z.string(),
    /** The reply it carries; for an error callback, the incoming message that could not be answered. */
    message_id: z.string(),
    /** `reply`, or `error`: the incoming message could not be answered (WebhookErrorBody). */
    kind: z.enum(['reply', 'error']),
    status: DeliveryStatus,
    attempts: z.number().int(),
    created_at: z.string(),
    next_attempt_at: z.string().nullable(),
    give_up_at: z.string(),
    last_attempt_at: z.string().nullable(),
    last_status: z.number().int().nullable(),
    last_error: z.string().nullable(),
    finished_at: z.string().nullable(),
  }),
);
export type Delivery = z.infer<typeof Delivery>;

export const WebhookResults = lazySchema(() => ({
  list_deliveries: z.object({ deliveries: z.array(Delivery) }),
  retry_delivery: z.object({ delivery: Delivery }),
}));
