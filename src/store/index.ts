import path from 'node:path';
import { nullLogger } from '../log/logger';
import { BLOBS_DIR_NAME, BlobStore } from './blob-store';
import type { Logger } from '../log/logger';
import { ConversationsRepo } from './conversations';
import { Database } from './database';
import type { DatabaseOptions } from './database';
import { MemoryRepo } from './memory';
import { MessagesRepo } from './messages';
import { MetaRepo } from './meta';
import { PermissionRequestsRepo } from './permission-requests';
import { migrate, MIGRATIONS } from './migrations';
import type { Migration } from './migrations';
import { PushDevicesRepo } from './push-devices';
import { DevicesRepo } from './devices';
import { FileChangesRepo } from './file-changes';
import { AttachmentsRepo } from './attachments';
import { RegistrationsRepo } from './registrations';
import { WebhooksRepo } from './webhooks';
import { UsageRepo } from './usage';
import { HistoryStore, HISTORY_FILE_NAME } from './history/history-store';
import { HistoryMaintenance } from './history/maintenance';
import type { RetentionPolicy } from './history/maintenance';

export { Database } from './database';
export { BlobDamagedError, BlobStore, hashBytes, isBlobHash } from './blob-store';
export type { BlobRef } from './blob-store';
export { DataDirInUseError, pidAlive } from '../platform/lock-file';
export { JournalDamagedError } from './recovery';
export type { DatabaseOptions, DatabaseStats, RunResult, SqlParam, SqlParamInput, WriteTx } from './database';
export { ConversationsRepo } from './conversations';
export type { ListConversationsOptions } from './conversations';
export { MessagesRepo, clientKeyOf, clientMessageIdOf, insertMessage } from './messages';
export type { RecentOptions } from './messages';
export { MemoryRepo } from './memory';
export { RegistrationsRepo } from './registrations';
export { MetaRepo } from './meta';
export { PermissionRequestsRepo } from './permission-requests';
export type { NewPermissionRequest, PermissionRequestRow, PermissionResolutionRecord } from './permission-requests';
export { WebhooksRepo } from './webhooks';
export { UsageRepo } from './usage';
export type { ModelUsageSum, NewUsage, UsageRow, UsageSum } from './usage';
export { PushDevicesRepo, mayUse } from './push-devices';
export { DevicesRepo } from './devices';
export type { DeviceRow } from './devices';
export { FileChangesRepo } from './file-changes';
export type { FileChangeRow, FileChangeState, NewFileWrite, TurnChangesSummary } from './file-changes';
export { AttachmentsRepo, bindAttachments, insertAttachment } from './attachments';
export type { AttachmentRow } from './attachments';
export type { NewPushDevice, PushDeliveryRecord, PushDeviceEvents, PushDeviceRow } from './push-devices';
export type { AcceptInput, AcceptResult, AttemptRecord, DeliveryFilter, DeliveryRow, InboxRow, NewDelivery } from './webhooks';
export { migrate, MIGRATIONS, schemaVersion } from './migrations';
export { backupDataDir, restoreDataDir, BACKUP_MANIFEST } from './backup';
export type { Migration } from './migrations';
export { HistoryStore, HISTORY_FILE_NAME } from './history/history-store';
export { HistoryMaintenance } from './history/maintenance';
export type { RetentionPolicy } from './history/maintenance';
export type * from './types';

export interface OpenStoreOptions extends DatabaseOptions {
  /** Schema migrations (default: the project's). */
  migrations?: readonly Migration[];
  /** history.max_days / max_bytes / tool_output_days (change later with `maintenance.setPolicy`). */
  retention?: RetentionPolicy;
  /** Between background passes over history.db (default 10 minutes). */
  maintenanceIntervalMs?: number;
  /** Clock of retention (tests). */
  now?: () => number;
}

export interface Store {
  db: Database;
  conversations: ConversationsRepo;
  messages: MessagesRepo;
  memory: MemoryRepo;
  registrations: RegistrationsRepo;
  meta: MetaRepo;
  webhooks: WebhooksRepo;
  pushDevices: PushDevicesRepo;
  devices: DevicesRepo;
  permissionRequests: PermissionRequestsRepo;
  /** What turns did to files (undo_turn). */
  fileChanges: FileChangesRepo;
  /** Bulky binary content (attachments, before-images) outside the in-memory database. */
  blobs: BlobStore;
  usage: UsageRepo;
  /**
   * Writes a consistent copy of the store's files into `destDir` (an existing directory) and returns their
   * names: service.db, holding every write acknowledged before the call (Database.copySnapshot), then
   * history.db (VACUUM INTO in its worker), which holds every body those messages refer to since bodies
   * are committed before their messages (store/backup.ts does the rest of the data directory).
   */
  backup(destDir: string): Promise<string[]>;
  /** Uploaded files (their bytes are blobs). */
  attachments: AttachmentsRepo;
  /** history.db: message bodies and their search index (worker thread). */
  history: HistoryStore;
  /** Background passes over history.db: sweeps, moves, retention, freeing space. */
  maintenance: HistoryMaintenance;
  /** Why writes fail right now (a full disk), null when they work (/health). */
  problem(): Promise<string | null>;
  close(): Promise<void>;
}

/**
 * history.db gives out body keys in increasing order and never reuses one, so a message referring to a
 * key above its highest means history.db lost committed transactions (a damaged WAL, a file replaced
 * by an older copy): refused rather than serving messages without their bodies, unless `recover`.
 */
function checkHistoryComplete(db: Database, history: HistoryStore, logger: Logger, recover: boolean): void {
  const referenced = db.get<{ k: number | null }>('SELECT max(body_key) AS k FROM messages WHERE body_key IS NOT NULL')?.k ?? 0;
  if (referenced <= history.keysBeforeOpen) return;
  const problem =
    `${HISTORY_FILE_NAME} in ${db.dir} is missing message bodies that were acknowledged (it ends at body ${history.keysBeforeOpen}, ` +
    `messages refer to bodies up to ${referenced}): it was damaged or replaced by an older copy.`;
  if (!recover) {
    throw new Error(`${problem} The store was not opened and nothing was changed. To start anyway, run \`remote-assistant serve --recover\`: those messages then read as an error.`);
  }
  logger.error('history.bodies_missing', { last_key: history.keysBeforeOpen, referenced });
}

/** Opens (or creates) the database in `dataDir`, brings its schema up to date, and returns the repositories. */
export async function openStore(dataDir: string, options: OpenStoreOptions = {}): Promise<Store> {
  const logger = (options.logger ?? nullLogger).child({ component: 'store' });
  // The history worker starts while sql.js loads; history.db is opened once the directory is locked.
  const boot = HistoryStore.boot();
  let db: Database;
  try {
    db = await Database.open(dataDir, options);
  } catch (err) {
    await boot.cancel();
    throw err;
  }
  let history: HistoryStore | undefined;
  let blobs: BlobStore;
  try {
    await migrate(db, options.migrations ?? MIGRATIONS, logger);
    history = await boot.open(db.dir);
    checkHistoryComplete(db, history, logger, options.recover === true);
    blobs = await BlobStore.open(path.join(db.dir, BLOBS_DIR_NAME));
  } catch (err) {
    await history?.close().catch(() => {});
    await boot.cancel();
    await db.close().catch(() => {});
    throw err;
  }
  const maintenance = new HistoryMaintenance(db, history, { logger, intervalMs: options.maintenanceIntervalMs, now: options.now });
  if (options.retention) maintenance.setPolicy(options.retention);
  maintenance.start();
  const opened = history;
  const messages = new MessagesRepo(db, history);
  return {
    db,
    conversations: new ConversationsRepo(db, () => maintenance.kick()),
    messages,
    memory: new MemoryRepo(db),
    registrations: new RegistrationsRepo(db),
    meta: new MetaRepo(db),
    webhooks: new WebhooksRepo(db, messages),
    pushDevices: new PushDevicesRepo(db),
    devices: new DevicesRepo(db),
    permissionRequests: new PermissionRequestsRepo(db),
    fileChanges: new FileChangesRepo(db),
    blobs,
    usage: new UsageRepo(db),
    // The snapshot first, then history.db: every body a copied message refers to was committed before it.
    backup: async (destDir) => {
      await db.copySnapshot(path.join(destDir, db.fileName));
      await opened.copyTo(path.join(destDir, HISTORY_FILE_NAME));
      return [db.fileName, HISTORY_FILE_NAME];
    },
    attachments: new AttachmentsRepo(db),
    history,
    maintenance,
    problem: async () => (await db.problem()) ?? opened.failed ?? opened.degraded,
    close: async () => {
      await maintenance.stop();
      await db.flush().catch(() => {});
      await opened.close();
      await db.close();
    },
  };
}
