import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger';
import type { NewMessage, PermissionRequestRow, Store } from '../store';
import { deniedText, RESTARTED_WHY } from './permission-texts';
import type { ToolResultData } from './transcript';

/**
 * At start: the requests a stopped service left waiting (it was killed, or the machine went down) end
 * their turns cleanly: each tool call gets a stored denied result saying why, and the request is
 * resolved `restarted`, in one transaction per conversation.
 */
export async function finishInterruptedRequests(store: Pick<Store, 'permissionRequests'>, logger: Logger): Promise<void> {
  const byConversation = new Map<string, PermissionRequestRow[]>();
  for (const row of store.permissionRequests.pending()) {
    const rows = byConversation.get(row.request.conversation_id) ?? [];
    rows.push(row);
    byConversation.set(row.request.conversation_id, rows);
  }
  const now = Date.now();
  for (const [conversationId, rows] of byConversation) {
    const results = rows.filter((row) => row.callId !== null).map((row): NewMessage => deniedResult(conversationId, row, now));
    await store.permissionRequests.finishInterrupted(
      conversationId,
      rows.map((row) => row.request.request_id),
      { decision: 'deny', reason: 'restarted', resolvedMs: now },
      results,
    );
    logger.info('permission.restarted', { conversation: conversationId, requests: rows.length });
  }
}

function deniedResult(conversationId: string, row: PermissionRequestRow, now: number): NewMessage {
  return {
    id: randomUUID(),
    conversation_id: conversationId,
    role: 'tool',
    tool_name: row.request.tool,
    content: deniedText(RESTARTED_WHY),
    timestamp: new Date(now).toISOString(),
    data: { kind: 'result', call_id: row.callId!, ok: false, denied: true } satisfies ToolResultData,
  };
}
