import { z } from 'zod';

/** Body of `POST <incoming_path>` (service-spec 4.5). */
export const WebhookIncomingBody = z.object({
  message: z.string({ error: 'message must be a string' }).min(1, { error: 'message must not be empty' }),
  user_id: z.string({ error: 'user_id must be a string' }).optional(),
  conversation_id: z.string({ error: 'conversation_id must be a string' }).min(1).optional(),
});
export type WebhookIncomingBody = z.infer<typeof WebhookIncomingBody>;

/** Body the service POSTs to `outgoing_url`. */
export const WebhookOutgoingBody = z.object({ message: z.string(), conversation_id: z.string() });
export type WebhookOutgoingBody = z.infer<typeof WebhookOutgoingBody>;

/**
 * Body POSTed to `outgoing_url` instead of a reply when an accepted message cannot be answered (the
 * provider refused it, or kept failing for the account's retry window). `message_id` is the incoming one.
 */
export const WebhookErrorBody = z.object({
  status: z.literal('error'),
  /** Present for a refusal a sender may act on: `budget_exceeded` (the account's daily budget is spent). */
  code: z.string().optional(),
  error: z.string(),
  conversation_id: z.string(),
  message_id: z.string(),
});
export type WebhookErrorBody = z.infer<typeof WebhookErrorBody>;
