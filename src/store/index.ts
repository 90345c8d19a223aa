import path from 'node:path';
import { nullLogger } from '../log/logger';
import { BLOBS_DIR_NAME, BlobStore, type Blobs } from './blob-store';
import type { Logger } from '../log/logger';
import { ConversationsRepo } from './conversations';
import { Database } from './database';
import type { DatabaseOptions } from './database';
import { MemoryRepo } from './memory';
import { LOST_BODY_TEXT, MessagesRepo } from './messages';
import { MetaRepo } from './meta';
import { PermissionRequestsRepo } from './permission-requests';
import { migrate, MIGRATIONS } from './migrations';
import type { Migration } from './migrations';
import { PushDevicesRepo } from './push-devices';
import { DevicesRepo } from './devices';
import { FileChangesRepo } from './file-changes';
import { AttachmentsRepo } from './attachments';
import { AttachmentHolds } from './attachment-holds';
import { RegistrationsRepo } from './registrations';
import { WebhooksRepo } from './webhooks';
import { UsageRepo } from './usage';
import { AuditRepo } from './audit';
import { WorktreesRepo } from './worktrees';
import { RetryKeysRepo } from './retry-keys';
import { HistoryStore, HISTORY_FILE_NAME } from './history/history-store';
import type { HistoryBoot, OpenedHistory } from './history/history-store';
import type { Worker } from 'node:worker_threads';
import { loadSqlJs } from './sqljs';
import { HistoryMaintenance } from './history/maintenance';
import type { RetentionPolicy } from './history/maintenance';
import type { KeyedBody } from './history/protocol';
import { reconcileColdRows, reconcileIfBehind, restoreJournaledBodies, seenMark, syncHistory } from './history/restore';
import { SALVAGE_UNDONE } from './history/salvage-aside';
import { highestReferencedKey, salvagedRefs } from './body-refs';

/** How long store.problem() waits for the history worker's answers to the bodies sent so far. */
const PROBLEM_WAIT_MS = 250;
export { Database } from './database';
export { BlobDamagedError, BlobStore, hashBytes, isBlobHash } from './blob-store';
export type { BlobRef } from './blob-store';
export { DataDirInUseError, pidAlive } from '../platform/lock-file';
export { JournalDamagedError } from './recovery';
export type { DatabaseOptions, DatabaseStats, RunResult, SqlParam, SqlParamInput, WriteTx } from './database';
export { ConversationsRepo } from './conversations';
export type { ListConversationsOptions } from './conversations';
export { MessagesRepo, clientKeyOf, clientMessageIdOf, keyIsPersons, LOST_BODY_TEXT, messageRow } from './messages';
export type { RecentOptions } from './messages';
export { MemoryRepo } from './memory';
export { RegistrationsRepo, type RegisteredKey } from './registrations';
export { MetaRepo } from './meta';
export { PermissionRequestsRepo } from './permission-requests';
export type { NewPermissionRequest, PermissionRequestRow, PermissionResolutionRecord } from './permission-requests';
export { WebhooksRepo } from './webhooks';
export { UsageRepo, usageOp } from './usage';
export { WorktreesRepo } from './worktrees';
export type { StoredWorktree, WorktreeStats } from './worktrees';
export { RetryKeysRepo, RETRY_KEYS_KEPT } from './retry-keys';
export type { RetryKey } from './retry-keys';
export { AuditRepo, auditHash, canonicalJson, AUDIT_GENESIS_HASH } from './audit';
export type { AuditFilter, AuditVerdict, NewAuditEntry } from './audit';
export type { ModelUsageSum, NewUsage, UsageContext, UsageRow, UsageSum } from './usage';
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
  /** Messages whose metadata stays in sql.js (the most recently active conversations'); the rest moves to history.db. */
  hotMessages?: number;
  /** Fold an open's migrations into the snapshot at once (default); off only for tests that read their record from the journal. */
  compactMigrated?: boolean;
  /** Started earlier by `bootStore` (default: started by the open itself). */
  boot?: StoreBoot;
}

/** What an open can start before it knows anything of the data directory: see bootStore. */
export interface StoreBoot {
  history: HistoryBoot;
}

/**
 * Starts loading both SQLite engines (the history worker's and sql.js, each compiling its WASM) before
 * the caller's own start-up work (reading service.json), so they load while it waits for files; hand
 * it to `openStore`, or `cancel` it when the open will not come. `historyWorker`: one started even
 * earlier (startHistoryWorker: the command line's entry starts it before loading the service).
 * `dataDir`: the directory the open will be of; a new one's history.db is built meanwhile (HistoryStore.boot).
 */
export function bootStore(historyWorker?: Worker, dataDir?: string): StoreBoot & { cancel: () => Promise<void> } {
  loadSqlJs().catch(() => {}); // a failure is reported by the open, which asks again
  const history = HistoryStore.boot(historyWorker, dataDir);
  return { history, cancel: history.cancel };
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
  blobs: Blobs;
  usage: UsageRepo;
  /** Who did what from where (append-only, hash-chained). */
  audit: AuditRepo;
  /** Conversations that work in their own git worktree (issue 24). */
  worktrees: WorktreesRepo;
  /** retry_turn's client_retry_ids, with the message each retried (a resend after a restart is answered). */
  retryKeys: RetryKeysRepo;
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
  /** Why writes fail right now (a full disk) or history.db is known damaged, null when all is well (/health). */
  problem(): Promise<string | null>;
  close(): Promise<void>;
}

/**
 * history.db gives out body keys in increasing order and never reuses one, so a message referring to a
 * key above its highest means history.db lost committed transactions (a damaged WAL, a file replaced
 * by an older copy): refused rather than serving messages without their bodies. With `recover` the
 * lost bodies are stored back as LOST_BODY_TEXT under their keys, new keys start above every key
 * service.db refers to, and the store says degraded until the service restarts.
 */
async function checkHistoryComplete(db: Database, history: HistoryStore, present: number, logger: Logger, recover: boolean): Promise<void> {
  const referenced = highestReferencedKey(db);
  if (referenced <= present) return;
  const problem =
    `${HISTORY_FILE_NAME} in ${db.dir} is missing message bodies that were acknowledged (it ends at body ${present}, ` +
    `service.db refers to bodies up to ${referenced}): it was damaged or replaced by an older copy.`;
  if (!recover) {
    // history.db's open wrote its sync mark before this check (and the bodies the journal held back).
    throw new Error(
      `${problem} The store was not opened and no message or body was changed (the open wrote only history.db's sync mark, the bodies its journal still held and any update of service.db's schema). To start anyway, run \`remote-assistant serve --recover\`: those messages then read "${LOST_BODY_TEXT}".`,
    );
  }
  // Every referrer's (a message's, an inbox message's, a pending delivery's: body-refs.ts).
  const lost = salvagedRefs(db, present);
  await history.fill(
    lost.map((ref) => ({ ...ref, content: LOST_BODY_TEXT, data: null })),
    referenced,
  );
  history.damaged ??= `${HISTORY_FILE_NAME} had lost ${lost.length} acknowledged bodies (damaged or replaced by an older copy); they read "${LOST_BODY_TEXT}" now. Started with --recover: restart the service to clear this notice`;
  logger.error('history.bodies_missing', { last_key: present, referenced, lost: lost.length });
}

/**
 * `serve --recover` with a history.db the check at open found damaged: it is rebuilt from the bodies it
 * still gives (the damaged file kept aside) and those the journal still holds (`journaled`: acknowledged
 * bodies history.db may never have written, or lost with the damage), the others read LOST_BODY_TEXT;
 * degraded until a restart.
 */
async function salvageHistory(db: Database, history: HistoryStore, journaled: KeyedBody[], logger: Logger): Promise<void> {
  // Webhook messages waiting in the inbox and pending deliveries have their body in history.db too (store/webhooks.ts).
  // New keys start above every journaled one too, as restoreJournaledBodies makes them: never given twice.
  const above = journaled.reduce((max, b) => Math.max(max, b.key), Math.max(highestReferencedKey(db), history.keysBeforeOpen));
  const result = await history.salvage(salvagedRefs(db), LOST_BODY_TEXT, above, journaled, seenMark(db));
  // Cold messages whose rows were on damaged pages: not in the rebuilt file, and sql.js no longer has them.
  const cold = await reconcileColdRows(db, history, logger);
  const coldLost = cold.messages === 0 ? '' : `; ${cold.messages} messages of ${cold.conversations} conversations whose rows were on its damaged pages are lost whole`;
  history.damaged =
    `${HISTORY_FILE_NAME} was damaged (${history.damageAtOpen}) and was rebuilt by --recover: ${result.kept} bodies read back, ` +
    `${result.lost} lost (bodies of messages, of webhook messages waiting and of pending deliveries; the lost read "${LOST_BODY_TEXT}")${coldLost}; the damaged file and its WAL are kept in ${path.basename(result.aside)}/. Restart the service to clear this notice`;
  logger.error('history.salvaged', { damage: history.damageAtOpen, kept: result.kept, lost: result.lost, cold_lost: cold.messages, aside: path.basename(result.aside) });
}

/** The repositories over one database and its history.db: a store's (openStore) or a scratch store's (store/scratch.ts). */
export function repositories(
  db: Database,
  history: HistoryStore,
  parts: { audit: AuditRepo; usage: UsageRepo; blobs: Blobs; kick: () => void; holds: AttachmentHolds },
): Omit<Store, 'backup' | 'history' | 'maintenance' | 'problem' | 'close'> {
  const { audit, usage, blobs, kick, holds } = parts;
  const conversations = new ConversationsRepo(db, holds, kick);
  const messages = new MessagesRepo(db, history, (id) => conversations.sourceOf(id) !== undefined);
  return {
    db,
    conversations,
    messages,
    memory: new MemoryRepo(db),
    registrations: new RegistrationsRepo(db),
    meta: new MetaRepo(db),
    webhooks: new WebhooksRepo(db, messages),
    pushDevices: new PushDevicesRepo(db),
    devices: new DevicesRepo(db, audit),
    permissionRequests: new PermissionRequestsRepo(db, audit, messages),
    fileChanges: new FileChangesRepo(db, audit),
    blobs,
    usage,
    audit,
    worktrees: new WorktreesRepo(db),
    retryKeys: new RetryKeysRepo(db),
    attachments: new AttachmentsRepo(db, holds),
  };
}

/** Opens (or creates) the database in `dataDir`, brings its schema up to date, and returns the repositories. */
export async function openStore(dataDir: string, options: OpenStoreOptions = {}): Promise<Store> {
  const logger = (options.logger ?? nullLogger).child({ component: 'store' });
  // Without a boot of the caller's, the history worker starts once the directory is locked (a second
  // window's open, refused the lock, starts none), beside sql.js's load; history.db opens in it then.
  let booted = options.boot?.history;
  const boot = () => (booted ??= HistoryStore.boot());
  let db: Database;
  // history.db opens in its worker as soon as service.lock is held, while service.db is read and its
  // schema migrates here: neither waits for the other's fsyncs.
  let opening: Promise<OpenedHistory> | undefined;
  // history.db is checked meanwhile but written (its open's sync mark) only once service.db opened: an
  // open refused for a damaged service.db leaves history.db as it was (test/store/history-leftovers.test.ts).
  let serviceOpened: (opened: boolean) => void = () => {};
  const mayWrite = new Promise<void>((resolve, reject) => (serviceOpened = (opened) => (opened ? resolve() : reject(new Error('service.db was not opened')))));
  mayWrite.catch(() => {});
  const openHistory = (dir: string) => {
    const started = boot().open(dir, options.recover === true, mayWrite);
    started.catch(() => {});
    opening = started;
    // service.db's open failed: history.db is closed, unchanged, before service.lock is released.
    return async () => {
      serviceOpened(false);
      await (await started.catch(() => undefined))?.store.close();
    };
  };
  try {
    // Journal segments may hold the only durable copy of bodies until history.db is synced (restore.ts).
    db = await Database.open(dataDir, { ...options, holdCompaction: true, withLock: openHistory });
    serviceOpened(true);
  } catch (err) {
    await booted?.cancel();
    throw err;
  }
  let history: HistoryStore | undefined;
  let blobs: BlobStore;
  /** The fold of this open's migrations into the snapshot: a close waits for it (else the next open replays them, and no longer folds them). */
  let folding: Promise<void> | undefined;
  let blobsOpening: Promise<BlobStore> | undefined;
  try {
    if (!opening) throw new Error('history.db was not opened with service.db');
    // blobs/ is made (or a crash's temporary files in it removed) while the schema migrates and history.db opens.
    blobsOpening = BlobStore.open(path.join(db.dir, BLOBS_DIR_NAME));
    blobsOpening.catch(() => {});
    const migrated = await migrate(db, options.migrations ?? MIGRATIONS, logger);
    const openedHistory = await opening;
    history = openedHistory.store;
    if (history.salvageUndoneAtOpen) logger.warn('history.salvage_undone', { message: SALVAGE_UNDONE });
    if (history.damageAtOpen !== null) {
      // The salvage reads what the damaged file still gives, then the journal's copies, placeholders for the rest.
      await salvageHistory(db, history, db.takeReplayedBodies(), logger);
    } else {
      await checkHistoryComplete(db, history, await restoreJournaledBodies(db, history, logger), logger, options.recover === true);
      await reconcileIfBehind(db, history, logger);
    }
    await syncHistory(db, history);
    const synced = history;
    db.releaseCompaction(() => syncHistory(db, synced));
    // A migration's record would be replayed at every open until its segment filled (a big one held the
    // loop seconds at each start): folded into the snapshot now, in the worker.
    if (migrated.from > 0 && migrated.from < migrated.to && options.compactMigrated !== false) {
      folding = db.compact().catch((err: unknown) => logger.warn('store.compact_after_migration_failed', { error: err instanceof Error ? err.message : String(err) }));
    }
    // The sync's mark is noted in service.db only by its next write, after this open: history.db's entry is durable by then.
    [blobs] = await Promise.all([blobsOpening, openedHistory.entriesDurable]);
  } catch (err) {
    // A failed migration does not wait for history.db's open: it is closed once opened. blobs/'s
    // leftover cleanup ends before the lock goes with service.db (the next holder's temp files are its own).
    await (history ?? (await opening?.catch(() => undefined))?.store)?.close().catch(() => {});
    await blobsOpening?.catch(() => {});
    await booted?.cancel();
    await db.close().catch(() => {});
    throw err;
  }
  const audit = new AuditRepo(db, options.now);
  const usage = new UsageRepo(db, history);
  // A held file the orphan pass left, once let go, owes a collection (a pass drops it): attack36.
  const holds = new AttachmentHolds(() => maintenance.deleted());
  const maintenance = new HistoryMaintenance(db, history, { logger, intervalMs: options.maintenanceIntervalMs, now: options.now, audit, usage, blobs, holds, hotMessages: options.hotMessages });
  if (options.retention) maintenance.setPolicy(options.retention);
  maintenance.start();
  const opened = history;
  return {
    ...repositories(db, history, { audit, usage, blobs, kick: () => maintenance.deleted(), holds }),
    // The snapshot first, then history.db: every body a copied message refers to was committed before it.
    backup: async (destDir) => {
      await db.copySnapshot(path.join(destDir, db.fileName));
      await opened.copyTo(path.join(destDir, HISTORY_FILE_NAME));
      return [db.fileName, HISTORY_FILE_NAME];
    },
    history,
    maintenance,
    problem: async () => {
      // The bodies written so far answered first: a refusal the last turn met shows here (and a success
      // clears it); not longer than PROBLEM_WAIT_MS, /health answers at once (a worker busy with a backup's
      // copy or a vacuum step, or stuck, would hold it): what the worker says later shows at the next ask.
      await Promise.race([opened.answered(), new Promise<void>((resolve) => setTimeout(resolve, PROBLEM_WAIT_MS).unref())]);
      return (await db.problem()) ?? opened.failed ?? opened.damaged ?? opened.degraded;
    },
    close: async () => {
      await maintenance.stop();
      await folding;
      await db.flush().catch(() => {});
      // A hand-over to the compactor syncs history.db first: it must not find it closed.
      await db.handedOver();
      await opened.close();
      await db.close();
    },
  };
}
