/**
 * Which tool cards on screen wait for a person: a call whose permission prompt is open has not started,
 * so its card says "waiting for you", not "running…" (tool-card.ts `setWaiting`). A request names its
 * call (`call_id`): it marks that call's card. From an older service (no `call_id`) it marks the first
 * running card of the same tool with the same arguments, else the first running card of the same tool.
 */
import type { PermissionRequest } from '../../protocol';
import type { ToolCard } from './tool-card';

export function markWaitingTools(cards: readonly ToolCard[], requests: readonly PermissionRequest[], conversationId: string | undefined): void {
  const running = cards.filter((card) => card.running);
  const waiting = new Set<ToolCard>();
  for (const request of requests) {
    if (request.conversation_id !== conversationId) continue;
    if (request.call_id !== undefined) {
      const card = running.find((c) => c.callId === request.call_id);
      if (card) waiting.add(card);
      continue;
    }
    const free = running.filter((card) => card.tool === request.tool && !waiting.has(card));
    const asked = JSON.stringify(request.arguments);
    const card = free.find((c) => JSON.stringify(c.argumentsGiven) === asked) ?? free[0];
    if (card) waiting.add(card);
  }
  for (const card of running) card.setWaiting(waiting.has(card));
}
