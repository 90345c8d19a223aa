/**
 * The reply that ended a turn: the turn's last message (before the next user message), when it is the
 * assistant's. Not its first assistant message: what the model wrote before calling tools is stored as
 * an assistant message too, followed by the calls; a turn cut short ends on a tool row and has no reply.
 * Parameters: conversation_id and the seq of the turn's user message, twice each.
 */
export function turnReplySql(columns: string): string {
  return `SELECT ${columns} FROM messages WHERE conversation_id = ? AND seq > ?
    AND seq < COALESCE((SELECT MIN(seq) FROM messages WHERE conversation_id = ? AND seq > ? AND role = 'user'), 9007199254740991)
    ORDER BY seq DESC LIMIT 1`;
}
