/**
 * The conversation's last user message when nothing answered it (no assistant message after it): its turn
 * failed or was stopped, as neither stores a reply. One rule for the service (get_messages' `unanswered`)
 * and the page (its notice after a reload); no schema here, so the page's bundle takes no zod with it.
 */
export function lastUnanswered<M extends { role: string }>(messages: readonly M[]): M | undefined {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const message = messages[i]!;
    if (message.role === 'assistant') return undefined;
    if (message.role === 'user') return message;
  }
  return undefined;
}
