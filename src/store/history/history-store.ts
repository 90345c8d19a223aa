import { chmod } from 'node:fs/promises';
import path from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../platform/file-modes';
import { packedMap } from '../../platform/packed-map';
import { fsyncDir } from '../replay';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { ServiceError } from '../../protocol/errors';
import { startHistoryWorker } from './start-worker';
import { bodyChars, CORRUPT, cutText, DISK_FULL } from './protocol';
import { RecentBodies } from './recent-bodies';
import type {
  BodyIn,
  BodyOut,
  BodyRef,
  ColdCutResult,
  ColdMeta,
  ColdQuery,
  ColdRow,
  ColdUsage,
  HistoryReplies,
  HistoryRequest,
  HistoryStats,
  KeyedBody,
  RawSearchHit,
  SalvageResult,
  SyncMarks,
  WorkerAnswer,
  WorkerInbound,
  WorkerOutbound,
} from './protocol';

export const HISTORY_FILE_NAME = 'history.db';
/** What a scratch HistoryStore (HistoryStore.scratch) names as its file: it has none. */
const SCRATCH_FILE = ':memory:';

/** A started history worker (HistoryStore.boot), waiting to open history.db. */
export interface HistoryBoot {
  /**
   * Opens and checks history.db at once, and writes to it (the open's sync mark) only once `mayWrite`
   * resolves (default: at once); if it rejects, the file is closed unchanged and the open rejects.
   */
  open: (dir: string, recover?: boolean, mayWrite?: Promise<void>) => Promise<OpenedHistory>;
  cancel: () => Promise<void>;
}

/** history.db opened, and its directory's fsync under way (see HistoryBoot.open). */
export interface OpenedHistory {
  store: HistoryStore;
  /**
   * Resolves once the directory entries of history.db and its WAL are durable; await it before any body
   * is acknowledged or service.db notes a sync mark. Its fsync runs beside what the store's open does next
   * (the journaled bodies' check, the first sync), not before it (docs/design.md, "What a start makes durable").
   */
  entriesDurable: Promise<void>;
}

/**
 * What a HistoryStore talks to: the history worker itself, or a channel of its own to a scratch database
 * in that worker (HistoryStore.scratch). Requests are answered in the order they are posted.
 */
interface HistoryChannel {
  onMessage(listener: (message: WorkerOutbound) => void): void;
  /** The worker failed or stopped: every call waiting (and every later one) fails with this error. */
  onFailure(listener: (err: Error) => void): void;
  post(message: WorkerInbound, transfer?: MessagePort[]): void;
  end(): Promise<unknown>;
}

function workerChannel(worker: Worker): HistoryChannel {
  return {
    onMessage: (listener) => worker.on('message', listener),
    onFailure: (listener) => {
      worker.on('error', (err) => listener(new ServiceError('server_error', `the history worker failed (${err.message}); restart the service`)));
      worker.on('exit', (code) => listener(new ServiceError('server_error', `the history worker stopped (exit code ${code})`)));
    },
    post: (message, transfer) => worker.postMessage(message, transfer),
    end: () => worker.terminate(),
  };
}

/**
 * How long `write` holds bodies for more to join them in one put to the worker. 250 ms, not 50: a put is
 * a worker transaction beside the turns on two cores, and at 50 ms a turn that met one was ~6x likelier
 * to be slow; with 250 the 0-tool turn's mean fell 16% and its p99 2 ms (docs/design.md, "The turn's
 * tail", s13). What waits longer costs nothing seen: reads take held bodies from memory, any other
 * request (search, sync, close) sends them first, the journal keeps them durable.
 */
const GROUP_MS = 250;
/** A group this large is sent at once. */
const GROUP_MAX_BYTES = 1024 * 1024;
/** Past this many bytes written and not yet answered by the worker, writers wait for their put (`write`'s `behind`). */
export const MAX_UNWRITTEN_BYTES = 16 * 1024 * 1024;

/**
 * Bodies held for one put to the worker: sent GROUP_MS after the first, or at once when GROUP_MAX_BYTES
 * are held or any other request (a read, `sync`, `close`) is sent, so the worker still sees every body
 * before any request sent after it was written. Held only in memory meanwhile: their journal record is
 * their durable copy (a kill -9 before the put loses nothing; the next open writes them from the
 * journal: restore.ts), and reads take them from memory (HistoryStore `unanswered`) until the worker
 * answered their put.
 */
class Group {
  readonly bodies: KeyedBody[] = [];
  bytes = 0;
  readonly written: Promise<void>;
  private resolve!: (done: Promise<void>) => void;
  private readonly timer: NodeJS.Timeout;

  constructor(send: () => void) {
    this.written = new Promise<void>((resolve) => (this.resolve = resolve));
    this.written.catch(() => {});
    // Not a reason to keep the process alive: `close` sends it, and a process that ends without closing leaves the bodies to the journal.
    this.timer = setTimeout(send, GROUP_MS).unref();
  }

  /** Adds bodies; their size in bytes (about: characters). */
  add(bodies: readonly KeyedBody[]): number {
    const bytes = bodies.reduce((n, b) => n + bodyChars(b), 0);
    this.bodies.push(...bodies);
    this.bytes += bytes;
    return bytes;
  }

  /** The group is sent: `written` follows `done`. */
  settle(done: Promise<void>): void {
    clearTimeout(this.timer);
    this.resolve(done);
  }
}

/** A held body's size in bytes, as history.db counts a stored one's (content and data). */
function heldBytes(body: KeyedBody): number {
  return Buffer.byteLength(body.content) + (body.data ? Buffer.byteLength(body.data) : 0);
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

/**
 * The main thread's side of history.db: every call is a message to the history worker, answered when
 * the worker has done it (a put resolves once its transaction is fsynced). The worker handles messages
 * in the order they are sent, so a read sent after a write sees it.
 *
 * Body keys are given here (they only grow and are never given twice), so a message's rows can refer to
 * its body before the worker has written it: `write` returns at once and a turn's transaction, journaled
 * with the bodies, follows in the same tick (one durable commit, no round trip).
 */
export class HistoryStore {
  private nextId = 1;
  /** The highest body key given out so far (by this process, or before it: history.db's `maxKey`). */
  private lastKey: number;
  /** Bodies just written, for the reads that follow (recent-bodies.ts). */
  private readonly recent = new RecentBodies();
  /**
   * Bodies `write` could not write (a full disk), by key: their journal record is their durable copy, so
   * they are written with the next write, and `sync` fails (compaction keeps the record) until they are.
   * Reads take them from here meanwhile.
   */
  private readonly owed = new Map<number, KeyedBody>();
  /**
   * Bodies `write` gave keys to that the worker has not answered for yet (held in `group`, or in a put
   * under way), by key. Reads take them from here: a put the worker then refuses leaves history.db
   * without them, and a read sent after it would find nothing there (the placeholder, and history.db
   * called damaged) while the body is in memory, owed. A refusal owes only those still here, so a body
   * removed meanwhile (its message deleted, its transaction failed) is not written back.
   */
  private readonly unanswered = new Map<number, KeyedBody>();
  private readonly pending = new Map<number, Pending>();
  /** Bodies `write` gave keys to and holds for the next put (null: none). */
  private group: Group | null = null;
  /** Bytes of bodies written (`write`) and not yet answered by the worker: held in `group` or in a put under way. */
  private unwritten = 0;
  /** The last group sent to the worker: settled once the worker answered every body `write` was given before it. */
  private lastSent: Promise<void> = Promise.resolve();
  private failure: Error | null = null;
  /** Why writes fail for now (a full disk), null when they work; cleared by the next stored body. */
  degraded: string | null = null;
  /**
   * Why history.db is known damaged (found at open under `serve --recover`, or met by a read): bodies
   * may be missing. Kept until the service restarts, whose open checks the file again (/health).
   */
  damaged: string | null;
  private closing: Promise<void> | null = null;
  private cutsSeen = 0;

  private constructor(
    private readonly channel: HistoryChannel,
    private readonly file: string,
    /** The highest key given out before this open: bodies above it were stored by this process. */
    readonly keysBeforeOpen: number,
    /** Why the check at open found the file damaged (opened only with `recover`), null when it did not. */
    readonly damageAtOpen: string | null,
    /** The sync mark the file held before this open (history-db.ts `marks`). */
    readonly markBeforeOpen: number,
    /** Whether the open first undid a salvage cut short (salvage-aside.ts), for the store to log. */
    readonly salvageUndoneAtOpen = false,
  ) {
    this.lastKey = keysBeforeOpen;
    this.damaged = damageAtOpen === null ? null : `${HISTORY_FILE_NAME} is damaged (${damageAtOpen}); it was opened with --recover`;
    channel.onMessage((message) => {
      if ('answers' in message) message.answers.forEach((a) => this.settle(a));
      else if ('id' in message) this.settle(message);
    });
    channel.onFailure((err) => {
      this.failure ??= err;
      for (const waiting of this.pending.values()) waiting.reject(this.failure);
      this.pending.clear();
    });
  }

  /**
   * Starts the worker (loading SQLite's WASM takes a while) before the data directory is locked, or
   * takes one `startHistoryWorker` started; `open` then opens history.db in it. Call `boot` early, `open` once
   * service.lock is held. `dir`: the data directory the open will name, when known now: if it has no
   * history.db, the worker builds a new one's bytes before the lock (history-worker.ts `prepare`).
   */
  static boot(started?: Worker, dir?: string): HistoryBoot {
    const worker = started ?? startHistoryWorker();
    if (dir !== undefined) worker.postMessage({ prepare: path.join(dir, HISTORY_FILE_NAME) } satisfies WorkerInbound);
    const failed = new Promise<never>((_, reject) => {
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the history worker exited (code ${code}) before opening ${HISTORY_FILE_NAME}`)));
    });
    failed.catch(() => {});
    const open = async (dir: string, recover = false, mayWrite = Promise.resolve()): Promise<OpenedHistory> => {
      const file = path.join(dir, HISTORY_FILE_NAME);
      try {
        // Posted before the first await: the caller's schema migration then blocks this thread for a
        // while, and the worker opens history.db meanwhile (it also removes a stale lock and creates
        // the file private: history-worker.ts).
        const ready = new Promise<{ stats: HistoryStats; damage: string | null; marks: SyncMarks; salvageUndone: boolean }>((resolve, reject) => {
          const onMessage = (message: WorkerOutbound) => {
            if (!('ready' in message)) return;
            worker.off('message', onMessage);
            if (message.ready) resolve(message);
            else reject(new Error(message.error));
          };
          worker.on('message', onMessage);
        });
        worker.postMessage({ open: file, recover } satisfies WorkerInbound);
        mayWrite.then(
          () => worker.postMessage({ begin: true } satisfies WorkerInbound),
          () => worker.postMessage({ begin: false } satisfies WorkerInbound),
        );
        const { stats, damage, marks, salvageUndone } = await Promise.race([ready, failed]);
        worker.removeAllListeners('error');
        worker.removeAllListeners('exit');
        // The worker's first transaction created the WAL, kept until close: private, and its directory
        // entry durable (this VFS does not sync directories), so after a power loss it is found.
        await chmod(`${file}-wal`, PRIVATE_FILE_MODE).catch(() => {});
        await chmod(`${file}.lock`, PRIVATE_DIR_MODE).catch(() => {});
        const entriesDurable = fsyncDir(dir);
        entriesDurable.catch(() => {});
        return { store: new HistoryStore(workerChannel(worker), file, stats.maxKey, damage, marks.before, salvageUndone), entriesDurable };
      } catch (err) {
        await worker.terminate();
        throw err;
      }
    };
    return { open, cancel: async () => void (await worker.terminate()) };
  }

  /** Opens `dir`/history.db (the caller holds service.lock). */
  static async open(dir: string, recover = false): Promise<HistoryStore> {
    const { store, entriesDurable } = await HistoryStore.boot().open(dir, recover);
    await entriesDurable;
    return store;
  }

  /**
   * A HistoryStore over a database in memory in this store's worker, on a channel of its own: the same
   * code on both threads as history.db's (HistoryDb.scratch), and nothing written to it. The warm-up's
   * practice turn stores its bodies there (store/scratch.ts); close it when done (the worker drops it).
   */
  scratch(): HistoryStore {
    // A worker already stopped would drop the port unseen, and the scratch store wait for good.
    if (this.failure || this.closing) throw this.failure ?? new ServiceError('server_error', 'the history store is closing');
    const { port1, port2 } = new MessageChannel();
    this.channel.post({ practise: port2 }, [port2]);
    let ended = false;
    const channel: HistoryChannel = {
      onMessage: (listener) => port1.on('message', listener),
      // The worker stopped (its end of the channel went with it), or failed.
      onFailure: (listener) => port1.once('close', () => ended || listener(new ServiceError('server_error', 'the history worker stopped'))),
      post: (message) => port1.postMessage(message),
      end: async () => {
        ended = true;
        port1.close();
      },
    };
    return new HistoryStore(channel, SCRATCH_FILE, 0, null, 0);
  }

  /**
   * How many of retention's cuts (`cut`, `cutCold`) changed bodies or may have, counted as the worker
   * answers each: bodies read before the count moved may be whole where history.db now has them cut. A
   * reader that keeps bodies (the agent's history cache) notes it before a read and reads again once it
   * moved (a pass every 10 minutes at most, and only when it sent keys to cut or marked cold rows).
   */
  get cuts(): number {
    return this.cutsSeen;
  }

  /** Why history.db cannot be used any more (its worker failed; a restart is needed), null while it can. */
  get failed(): string | null {
    return this.closing ? null : (this.failure?.message ?? null);
  }

  /** Stores bodies durably (one fsync); their keys, in order. */
  async put(bodies: BodyIn[]): Promise<number[]> {
    const keyed = this.keyed(bodies);
    if (keyed.length > 0) await this.sendPut(keyed, true);
    return keyed.map((b) => b.key);
  }

  /**
   * Gives bodies their keys and has them written without an fsync; returns at once. They survive a
   * killed process once the caller's journal record holding them is written (WriteTx.keepBodies), whose
   * one fsync makes rows and bodies durable together, until `sync` (before that journal segment is
   * compacted) covers them here. Bodies written within GROUP_MS of each other go to the worker in one
   * put (one transaction): see `Group`. `written` settles when the worker has written them; if it could
   * not, they are owed (written with the next write) and `written` rejects with why. `behind`: more than
   * MAX_UNWRITTEN_BYTES wait to be written, and the caller waits for `written` before going on, so a slow
   * worker cannot make memory grow without bound.
   */
  write(bodies: BodyIn[]): { bodies: KeyedBody[]; written: Promise<void>; behind: boolean } {
    // A worker that is gone writes nothing: no row may come to refer to these bodies.
    if (this.failure) throw this.failure;
    const keyed = this.keyed(bodies);
    this.recent.add(keyed);
    if (keyed.length === 0) return { bodies: keyed, written: Promise.resolve(), behind: false };
    for (const b of keyed) this.unanswered.set(b.key, b);
    const group = (this.group ??= new Group(() => this.post()));
    const bytes = group.add(keyed);
    this.unwritten += bytes;
    if (group.bytes >= GROUP_MAX_BYTES) this.post();
    return { bodies: keyed, written: group.written, behind: this.unwritten > MAX_UNWRITTEN_BYTES };
  }

  /**
   * Resolves once the worker answered every body `write` was given before the call (held ones are sent
   * now), so `degraded` says how their writes went (the store's `problem`).
   */
  async answered(): Promise<void> {
    this.post();
    await this.lastSent.catch(() => undefined);
  }

  /** Sends the bodies `write` holds to the worker now (any request sent after it then sees them). */
  post(): void {
    const group = this.group;
    if (!group) return;
    this.group = null;
    this.lastSent = group.written;
    const answered = (refused: boolean) => {
      this.unwritten -= group.bytes;
      for (const b of group.bodies) {
        // The copy held there: retention may have cut it meanwhile (`cut`).
        const held = this.unanswered.get(b.key);
        if (refused && held) this.owed.set(b.key, held);
        this.unanswered.delete(b.key);
      }
    };
    group.settle(
      this.sendPut(group.bodies, false).then(
        () => answered(false),
        (err: unknown) => {
          answered(true);
          throw err;
        },
      ),
    );
  }

  /** Makes every body written so far durable (one fsync); the sync mark it committed (history-db.ts). Fails while bodies are owed. */
  async sync(): Promise<number> {
    if (this.owed.size > 0) this.sendPut([], false).catch(() => {});
    const mark = await this.call({ op: 'sync' });
    // A write answered before this sync (the worker answers in order) that failed left its bodies owed.
    if (this.owed.size > 0) throw new ServiceError('server_error', `${this.owed.size} message bodies wait to be written to ${HISTORY_FILE_NAME} (${this.degraded ?? 'a write failed'})`);
    return mark;
  }

  private keyed(bodies: readonly BodyIn[]): KeyedBody[] {
    // One literal, not `{ ...b, key }`: on Node 20 a spread's object gets a hidden class of its own after
    // a few calls, and every reader of the bodies went megamorphic (docs/design.md, "(s19, turn19e)").
    return packedMap(bodies, (b) => ({ conversation_id: b.conversation_id, role: b.role, content: b.content, data: b.data, key: ++this.lastKey }));
  }

  /** One put, with the owed bodies first (written again: a key already there is skipped). */
  private async sendPut(bodies: KeyedBody[], durable: boolean): Promise<void> {
    const owed = [...this.owed.values()];
    await this.call({ op: 'put', bodies: owed.length > 0 ? [...owed, ...bodies] : bodies, durable });
    for (const b of owed) this.owed.delete(b.key);
    this.degraded = null;
  }

  /**
   * The bodies of `keys` that can be read. In a damaged file one unreadable body fails a whole request,
   * so then each key is asked alone and the unreadable ones are left out (the caller shows a placeholder).
   */
  async get(wanted: readonly number[]): Promise<Map<number, BodyOut>> {
    const out = new Map<number, BodyOut>();
    const keys: number[] = [];
    for (const key of wanted) {
      const held = this.owed.get(key) ?? this.unanswered.get(key);
      const body = held ? { key, content: held.content, data: held.data, cut: held.cut === true } : this.recent.get(key);
      if (body) out.set(key, body);
      else keys.push(key);
    }
    if (keys.length === 0) return out;
    let bodies: BodyOut[];
    try {
      bodies = await this.call({ op: 'get', keys });
    } catch (err) {
      if (!CORRUPT.test(String(err)) || keys.length === 1) throw err;
      const each = await Promise.allSettled(keys.map((key) => this.call({ op: 'get', keys: [key] })));
      bodies = each.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    }
    for (const body of bodies) out.set(body.key, body);
    return out;
  }

  /** Stores placeholder bodies under lost keys and makes new keys start above `above` (history-db.ts). */
  fill(bodies: KeyedBody[], above: number): Promise<number> {
    this.lastKey = bodies.reduce((max, b) => Math.max(max, b.key), Math.max(this.lastKey, above));
    return this.call({ op: 'fill', bodies, above });
  }

  /**
   * Replaces a damaged history.db by one rebuilt from what it still gives (history-db.ts `salvage`);
   * the new WAL is made private, as at open. `mark`: the sync mark service.db saw, which the rebuild's
   * marks go on above (else the next open takes the rebuild for an older copy: restore.ts).
   */
  async salvage(refs: BodyRef[], placeholder: string, above: number, journaled: KeyedBody[], mark: number): Promise<SalvageResult> {
    this.lastKey = Math.max(this.lastKey, above);
    this.recent.clear();
    const result = await this.call({ op: 'salvage', refs, placeholder, above, journaled, mark });
    // The damaged file's counter, which the open could not read when SQLite could not open the file.
    this.lastKey = Math.max(this.lastKey, result.maxKey);
    await chmod(`${this.file}-wal`, PRIVATE_FILE_MODE).catch(() => {});
    // Its renames (the damaged pair into the aside, the rebuild into place) were made durable, each
    // before the next step (salvage-aside.ts renameDurably).
    return result;
  }

  /** Says history.db is damaged (/health) once a read meets damage or a stored message has no body. */
  noteDamage(what: string): void {
    this.damaged ??= `${HISTORY_FILE_NAME} is damaged (${what}); messages whose bodies cannot be read show a placeholder. Restart the service with --recover to rebuild it from what it still gives`;
  }

  keysBetween(from: number, to: number): Promise<number[]> {
    return this.call({ op: 'keys', from, to });
  }

  remove(keys: readonly number[]): Promise<number> {
    this.recent.drop(keys);
    for (const key of keys) {
      this.owed.delete(key);
      this.unanswered.delete(key);
    }
    return keys.length === 0 ? Promise.resolve(0) : this.call({ op: 'remove', keys: [...keys] });
  }

  /**
   * Cuts the bodies of `keys` (history.db's and those held here); their new sizes by key, and the cut
   * copies held here (owed, or their put unanswered). Journal those with the transaction that marks
   * their rows cut (WriteTx.keepBodies): the record that holds such a body whole is its only durable
   * copy, and a restart would put it back whole (restore.ts: the last journaled copy of a key wins).
   */
  cut(keys: readonly number[], keepChars: number, note: string): Promise<{ sizes: Array<[number, number]>; held: KeyedBody[] }> {
    this.recent.drop(keys);
    const held = this.cutHeld(keys, keepChars, note);
    const done = this.call({ op: 'cut', keys: [...keys], keepChars, note }).then((sizes) => {
      const answered = new Set(sizes.map(([key]) => key));
      for (const [key, b] of held) if (!answered.has(key)) sizes.push([key, heldBytes(b)]);
      return { sizes, held: [...held.values()] };
    });
    return this.countCut(done, () => keys.length > 0);
  }

  /**
   * Whether the body of `key` is held here and not in history.db: owed (its put refused) or not yet
   * answered. Its journal record is then its only durable copy.
   */
  holds(key: number): boolean {
    return this.owed.has(key) || this.unanswered.has(key);
  }

  /**
   * Cuts the bodies of `keys` held here (owed, or their put not answered yet): reads from memory, and a
   * put refused later, give them as history.db holds them once written (its cut skips a key it lacks).
   * The copies held, by key.
   */
  private cutHeld(keys: readonly number[], keepChars: number, note: string): Map<number, KeyedBody> {
    const held = new Map<number, KeyedBody>();
    for (const key of keys) {
      for (const map of [this.owed, this.unanswered]) {
        const body = map.get(key);
        if (body && !body.cut) map.set(key, { ...body, content: cutText(body.content, keepChars, note), cut: true });
        if (map.has(key)) held.set(key, map.get(key)!);
      }
    }
    return held;
  }

  search(match: string, conversationId: string | null, limit: number): Promise<RawSearchHit[]> {
    return this.call({ op: 'search', match, conversationId, limit });
  }

  vacuum(pages: number): Promise<number> {
    return this.call({ op: 'vacuum', pages });
  }

  /** A consistent copy of history.db at `file` (for a backup): every body committed before the call. */
  copyTo(file: string): Promise<null> {
    return this.call({ op: 'copy', file });
  }

  stats(): Promise<HistoryStats> {
    return this.call({ op: 'stats' });
  }

  /** Stores the metadata of messages moving out of sql.js, durably (one fsync); the sync mark committed with it (cold.ts). */
  putCold(rows: ColdMeta[]): Promise<number> {
    return this.call({ op: 'coldPut', rows });
  }

  cold(query: ColdQuery): Promise<ColdRow[]> {
    return this.call({ op: 'cold', query });
  }

  /** Stores usage rows moving out of sql.js, durably (one fsync); the sync mark committed with them. */
  putColdUsage(rows: ColdUsage[]): Promise<number> {
    return this.call({ op: 'coldUsagePut', rows });
  }

  /** How many cold rows history.db has of each conversation, at or below its `cold_seq` ([id, cold_seq] pairs). */
  countCold(conversations: Array<[string, number]>): Promise<Array<[string, number]>> {
    return this.call({ op: 'coldCount', conversations });
  }

  coldUsage(messageIds: string[]): Promise<ColdUsage[]> {
    return this.call({ op: 'coldUsage', messageIds });
  }

  /** Deletes up to `limit` cold rows of a deleted conversation and their bodies; how many (0: none left). */
  dropCold(conversationId: string, limit: number): Promise<number> {
    this.recent.clear();
    return this.call({ op: 'coldDrop', conversationId, limit });
  }

  /**
   * Retention's cut of cold rows, all in the worker: a cold row's body is always in history.db (its row
   * moves only once the body is written: maintenance.ts `moveCold`), so nothing held here is cut.
   */
  cutCold(cutoff: string, keepChars: number, note: string, minBytes: number, limit: number): Promise<ColdCutResult> {
    this.recent.clear();
    return this.countCut(this.call({ op: 'coldCut', cutoff, keepChars, note, minBytes, limit }), (result) => result.rows > 0);
  }

  /** `done`, counted in `cuts` once answered if `changed` says so (a failure counts too: the worker may have cut before it failed). */
  private countCut<T>(done: Promise<T>, changed: (value: T) => boolean): Promise<T> {
    // Registered before the caller's own callbacks, so the count moved before it goes on.
    done.then(
      (value) => void (changed(value) && this.cutsSeen++),
      () => void this.cutsSeen++,
    );
    return done;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.post();
      if (!this.failure) await this.send<null>({ id: this.nextId++, close: true }).catch(() => {});
      await this.channel.end();
    })();
    return this.closing;
  }

  private settle(answer: WorkerAnswer): void {
    const waiting = this.pending.get(answer.id);
    if (!waiting) return;
    this.pending.delete(answer.id);
    if (answer.ok) {
      waiting.resolve(answer.value);
      return;
    }
    if (answer.error.startsWith(DISK_FULL)) this.degraded = answer.error;
    if (CORRUPT.test(answer.error)) this.noteDamage(answer.error);
    waiting.reject(new ServiceError('server_error', answer.error.includes(HISTORY_FILE_NAME) ? answer.error : `${HISTORY_FILE_NAME}: ${answer.error}`));
  }

  private call<K extends HistoryRequest['op']>(request: Extract<HistoryRequest, { op: K }>): Promise<HistoryReplies[K]> {
    if (this.closing) return Promise.reject(new Error('the store is closed'));
    // The worker answers in order: bodies written before this request are sent ahead of it.
    const asked: HistoryRequest = request;
    if (asked.op !== 'put' || asked.durable) this.post();
    return this.send({ id: this.nextId++, request });
  }

  private send<T>(message: Extract<WorkerInbound, { id: number }>): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(message.id, { resolve: resolve as (value: unknown) => void, reject });
      this.channel.post(message);
    });
  }
}
