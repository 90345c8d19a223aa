import type { Logger } from '../log/logger';
import { NONE_HELD, type AttachmentHolds } from './attachment-holds';
import { dropConversationAttachments } from './attachments';
import type { Collected } from './blob-guard';
import { blobReferences } from './blob-refs';
import type { Blobs } from './blob-store';
import type { Database } from './database';

/**
 * Conversations gone whose attachments' rows are left: a tool's image stored as its conversation went (rows
 * bound before migration 25, `uses_unknown`, are kept: another conversation may carry them unrecorded).
 */
const ORPHANED =
  'SELECT DISTINCT conversation_id FROM attachments WHERE conversation_id IS NOT NULL AND uses_unknown = 0 AND conversation_id NOT IN (SELECT id FROM conversations) UNION SELECT conversation_id FROM attachment_uses WHERE conversation_id NOT IN (SELECT id FROM conversations)';

/**
 * Frees what deleted conversations left in the blob store (history/maintenance.ts runs it after
 * deletions and at its first pass, off any turn's path): their orphaned attachment rows first (one
 * journaled transaction; those a waiting chat holds stay: AttachmentHolds), then every blob no row refers to (BlobStore.collect: a put whose row is not
 * yet written is never taken, and a removal waits for the rows' deletion to be durable).
 */
export async function collectBlobs(db: Database, blobs: Pick<Blobs, 'collect'>, logger: Logger, holds?: AttachmentHolds): Promise<Collected> {
  // A schema before migration 25 (only a test opens one): what refers to blobs is not all known.
  if (db.get("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'attachment_uses'") === undefined) return { removed: 0, bytes: 0 };
  if (db.get(`${ORPHANED} LIMIT 1`) !== undefined) {
    await db.write((tx) => {
      // What stays for them alone: their release owes the pass that drops it (AttachmentHolds `letGo`).
      for (const { conversation_id } of tx.all<{ conversation_id: string }>(ORPHANED)) holds?.passedOver(dropConversationAttachments(tx, conversation_id, holds ?? NONE_HELD));
    });
  }
  const started = performance.now();
  const collected = await blobs.collect(blobReferences(db));
  if (collected.removed > 0) logger.info('blobs.collected', { ...collected, ms: Math.round(performance.now() - started) });
  return collected;
}
