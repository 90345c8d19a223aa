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
