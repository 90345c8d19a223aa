import path from 'node:path';
import { nullLogger } from '../log/logger';
import { BLOBS_DIR_NAME, BlobStore } from './blob-store';
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

export { Database } from './database';
export { BlobDamagedError, BlobStore, hashBytes, isBlobHash } from './blob-store';
export type { BlobRef } from './blob-store';
export { DataDirInUseError, pidAlive } from '../platform/lock-file';
export { JournalDamagedError } from './recovery';
export type { DatabaseOptions, DatabaseStats, RunResult, SqlParam, SqlParamInput, WriteTx } from './database';
export { ConversationsRepo } from './conversations';
export type { ListConversationsOptions } from './conversations';
export { MessagesRepo, insertMessage } from './messages';
export type { RecentOptions } from './messages';
export { MemoryRepo } from './memory';
export { RegistrationsRepo } from './registrations';
export { MetaRepo } from './meta';
export { PermissionRequestsRepo } from './permission-requests';
export type { NewPermissionRequest, PermissionRequestRow, PermissionResolutionRecord } from './permission-requests';
export { WebhooksRepo } from './webhooks';
export { UsageRepo } from './usage';
export type { ModelUsageSum, NewUsage, UsageRow, UsageSum } from './usage';
export { PushDevicesRepo } from './push-devices';
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
export type * from './types';

export interface OpenStoreOptions extends DatabaseOptions {
  /** Schema migrations (default: the project's). */
  migrations?: readonly Migration[];
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
   * names: service.db, holding every write acknowledged before the call (Database.copySnapshot;
   * store/backup.ts does the rest of the data directory).
   */
  backup(destDir: string): Promise<string[]>;
  /** Uploaded files (their bytes are blobs). */
  attachments: AttachmentsRepo;
  close(): Promise<void>;
}

/** Opens (or creates) the database in `dataDir`, brings its schema up to date, and returns the repositories. */
export async function openStore(dataDir: string, options: OpenStoreOptions = {}): Promise<Store> {
  const db = await Database.open(dataDir, options);
  let blobs: BlobStore;
  try {
    await migrate(db, options.migrations ?? MIGRATIONS, (options.logger ?? nullLogger).child({ component: 'store' }));
    blobs = await BlobStore.open(path.join(db.dir, BLOBS_DIR_NAME));
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  return {
    db,
    conversations: new ConversationsRepo(db),
    messages: new MessagesRepo(db),
    memory: new MemoryRepo(db),
    registrations: new RegistrationsRepo(db),
    meta: new MetaRepo(db),
    webhooks: new WebhooksRepo(db),
    pushDevices: new PushDevicesRepo(db),
    devices: new DevicesRepo(db),
    permissionRequests: new PermissionRequestsRepo(db),
    fileChanges: new FileChangesRepo(db),
    blobs,
    usage: new UsageRepo(db),
    backup: async (destDir) => {
      await db.copySnapshot(path.join(destDir, db.fileName));
      return [db.fileName];
    },
    attachments: new AttachmentsRepo(db),
    close: () => db.close(),
  };
}
