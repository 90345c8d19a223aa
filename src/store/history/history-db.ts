// history.db: message bodies (content and data JSON) in a file-backed SQLite, so they stay on disk
// rather than in sql.js' memory. Synchronous (node-sqlite3-wasm); only the history worker uses it.
import { closeSync, fsyncSync, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Database as SqliteFile } from 'node-sqlite3-wasm';
import { COLD_SCHEMA, countCold, cutCold, dropCold, putCold, putColdUsage, queryCold, queryColdAfterSeq, queryColdUsage } from './cold';
import { cutBeforeOpen, damageAtOpen, pageSizeOf, type Cut } from './integrity';
import { copyWithFirstPage, createRebuild, keepAside, moveIntoSalvage, readableCopy, salvageFault, undoSalvage } from './salvage-aside';
import { syncCount } from './sync-count';
import { MARK_CLOSE, MARK_OPEN } from './marks';
import { bodyChars, CORRUPT, DAMAGE_SEEN_KEY, DISK_FULL, SYNC_MARK_KEY } from './protocol';
import { PRIVATE_FILE_MODE } from '../../platform/file-modes';
import { pidAlive } from '../../platform/lock-file';
import type { BodyOut, BodyRef, ColdCutResult, ColdMeta, ColdQuery, ColdRow, ColdUsage, HistoryStats, KeyedBody, RawSearchHit, SalvageResult, SyncMarks } from './protocol';

/**
 * WAL with locking_mode=EXCLUSIVE: the WASM build has no shared memory for WAL's index, but an exclusive
 * connection keeps that index in its own heap, and this worker is the only connection (service.lock).
 * A commit is then one append to history.db-wal and one fsync (synchronous=FULL): measured 8 ms a commit
 * on the loaded test machine, against 39-62 ms for journal_mode=TRUNCATE (three fsyncs, lock directory
 * made and removed each time). auto_vacuum=INCREMENTAL only takes effect when set before the first
 * table, so it is part of creation; incremental_vacuum then hands freed pages back in small steps.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS bodies (key INTEGER PRIMARY KEY AUTOINCREMENT, conversation_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, data TEXT, cut INTEGER NOT NULL DEFAULT 0);
CREATE VIRTUAL TABLE IF NOT EXISTS bodies_fts USING fts5(content, content='bodies', content_rowid='key', tokenize='unicode61 remove_diacritics 2', prefix='2 3 4');
CREATE TRIGGER IF NOT EXISTS bodies_ai AFTER INSERT ON bodies WHEN new.role <> 'tool' BEGIN
  INSERT INTO bodies_fts (rowid, content) VALUES (new.key, new.content);
END;
CREATE TRIGGER IF NOT EXISTS bodies_ad AFTER DELETE ON bodies WHEN old.role <> 'tool' BEGIN
  INSERT INTO bodies_fts (bodies_fts, rowid, content) VALUES ('delete', old.key, old.content);
END;
CREATE TRIGGER IF NOT EXISTS bodies_au AFTER UPDATE OF content ON bodies WHEN old.role <> 'tool' BEGIN
  INSERT INTO bodies_fts (bodies_fts, rowid, content) VALUES ('delete', old.key, old.content);
  INSERT INTO bodies_fts (rowid, content) VALUES (new.key, new.content);
END;`;

/**
 * Makes history.db when there is none (a new data directory): built whole as `<file>.new` with no
 * journal and no fsync, then fsynced once; answers that file, for the caller to rename in once it may
 * write (the store's open refused for a damaged service.db leaves no history.db: removeBuildAside) and to
 * make the directory entry durable. A crash leaves either no history.db or a whole one. Turning a new file to WAL in place and its
 * tables took 6 of the 9 fsyncs of a new directory's history.db (a rollback journal's commits), on the
 * start's longest path (issue 25). Only when no WAL is there either: SQLite deletes the WAL of an empty
 * file, and a new file must not meet an old WAL. `built`: the new file's bytes made before the lock
 * (newHistoryFileBytes), written as they are instead of built here.
 */
export function buildHistoryFileAside(file: string, mode: number, built?: Buffer): string {
  const fresh = removeBuildAside(file);
  if (built) writeFileSync(fresh, built, { mode, flag: 'wx' });
  else buildHistoryFile(fresh, mode);
  const fd = openSync(fresh, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return fresh;
}

/**
 * A new history.db's bytes, built in a private temporary directory (removed before this returns): the
 * history worker makes them as soon as it is told which file the open will name and that there is none
 * (history-worker.ts `prepare`), before the data directory is locked, while the service's thread still
 * loads service.json and takes the lock. Building them is most of a new data directory's history.db open
 * (SQLite compiling its code, the search index's tables), which otherwise began only at the lock and was
 * the longest path to the first command answered (docs/design.md, "What competes with the open for the
 * cores (s12)"). The same bytes as a build in place: a file's bytes do not depend on its name.
 */
export function newHistoryFileBytes(): Buffer {
  removeDeadBuilds();
  const dir = mkdtempSync(path.join(tmpdir(), `${PREBUILD_PREFIX}${process.pid}-`));
  try {
    const file = path.join(dir, 'history.db');
    buildHistoryFile(file, PRIVATE_FILE_MODE);
    return readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A prebuild's temporary directory is named `<prefix><pid>-<random>`: the process that made it. */
const PREBUILD_PREFIX = 'ra-history-new-';

/**
 * Removes the temporary directories of prebuilds whose process is gone: a start killed (or its worker
 * terminated: a bad service.json, the directory held by another) in the middle of one leaves it.
 */
function removeDeadBuilds(): void {
  const uid = process.getuid?.();
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREBUILD_PREFIX)) continue;
    const pid = Number(name.slice(PREBUILD_PREFIX.length).split('-')[0]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || pidAlive(pid)) continue;
    const at = path.join(tmpdir(), name);
    if (ownPrivateDirectory(at, uid)) rmSync(at, { recursive: true, force: true });
  }
}

/**
 * Whether `at` is a directory as mkdtemp makes ours: not a link, this user's, open to no one else. /tmp is
 * shared: an entry of that name may be another user's, who could swap a link in under a recursive removal
 * and have it delete what the link points to; inside our own 0700 directory (which the sticky /tmp lets
 * no one else rename) nobody else can. Where there are no owners (Windows, whose temporary folder is the
 * user's own) a real directory is enough.
 */
function ownPrivateDirectory(at: string, uid: number | undefined): boolean {
  let stats;
  try {
    stats = lstatSync(at);
  } catch {
    return false;
  }
  if (!stats.isDirectory()) return false;
  return uid === undefined || (stats.uid === uid && (stats.mode & 0o077) === 0);
}

/** Builds a new history.db at `fresh` (tables, the search index, WAL noted in its header): no journal, no fsync. */
function buildHistoryFile(fresh: string, mode: number): void {
  closeSync(openSync(fresh, 'w', mode));
  const db = new SqliteFile(fresh);
  try {
    db.exec('PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF; PRAGMA auto_vacuum = INCREMENTAL;');
    // One transaction: the file layer's lock (a folder made and removed) is taken once, not per statement.
    db.exec(`BEGIN; ${SCHEMA} ${COLD_SCHEMA} COMMIT;`);
    // WAL is noted in the file's header; exclusive locking: the WASM build has no shared memory for WAL.
    db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL;');
  } finally {
    db.close();
  }
  rmSync(`${fresh}-wal`, { force: true });
}

/**
 * Removes what a build of `<file>.new` (createHistoryFile) cut short by a crash leaves: the file, SQLite's
 * WAL, shared-memory and rollback journal beside it, the WASM VFS's lock folder. None is ever used again,
 * and a new build must not meet an old WAL (SQLite drops one beside an empty file, but that is not for
 * this code to rely on). Returns the aside file's name.
 */
export function removeBuildAside(file: string): string {
  const fresh = `${file}.new`;
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${fresh}${suffix}`, { force: true });
  rmSync(`${fresh}.lock`, { recursive: true, force: true });
  return fresh;
}

/** SQLite's name for a database that lives in memory only. */
const SCRATCH = ':memory:';

/** Keys per statement: well under SQLite's bound-parameter limit. */
const CHUNK = 500;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

function placeholders(n: number): string {
  return new Array<string>(n).fill('?').join(', ');
}

function bodiesOf(db: SqliteFile, keys: readonly number[]): BodyOut[] {
  const out: BodyOut[] = [];
  for (const part of chunks(keys)) {
    for (const row of db.all(`SELECT key, content, data, cut FROM bodies WHERE key IN (${placeholders(part.length)})`, part)) {
      out.push({ key: Number(row.key), content: String(row.content), data: row.data === null ? null : String(row.data), cut: Number(row.cut) === 1 });
    }
  }
  return out;
}

/** The bodies of `keys` that a damaged file still gives: a chunk that fails is asked key by key. */
function readableBodies(db: SqliteFile, keys: readonly number[]): BodyOut[] {
  try {
    return bodiesOf(db, keys);
  } catch {
    return keys.flatMap((key) => {
      try {
        return bodiesOf(db, [key]);
      } catch {
        return [];
      }
    });
  }
}

/**
 * The cold messages (cold.ts) a damaged file still gives, copied into the rebuilt one with their bodies
 * (the placeholder for a body that cannot be read). Read in order of seq, a chunk at a time: rows past
 * a chunk that cannot be read are lost (their conversations then read without them).
 */
function salvageCold(source: SqliteFile, target: HistoryDb, placeholder: string, above: number): { kept: number; lost: number } {
  let kept = 0;
  let lost = 0;
  for (let after = 0; ;) {
    let rows: ColdMeta[];
    try {
      rows = queryColdAfterSeq(source, after, CHUNK);
    } catch {
      return { kept, lost }; // no cold table (an older file), or its pages are damaged from here on
    }
    if (rows.length === 0) return { kept, lost };
    const found = new Map(
      readableBodies(
        source,
        rows.map((r) => r.body_key),
      ).map((b) => [b.key, b]),
    );
    target.fill(
      rows.map((r) => {
        const body = found.get(r.body_key);
        return { key: r.body_key, conversation_id: r.conversation_id, role: r.role, content: body?.content ?? placeholder, data: body ? body.data : null, cut: body?.cut };
      }),
      above,
    );
    target.putCold(rows);
    kept += found.size;
    lost += rows.length - found.size;
    after = rows[rows.length - 1].seq;
  }
}

/**
 * The damaged file opened to be read by the salvage (read only). When SQLite cannot open it or read its
 * schema (page 1 damaged: the header, the schema's root), it is read through a copy whose page 1 is a
 * new history.db's (copyWithFirstPage: every file this code makes has the same tables at the same root
 * pages), if what those pages hold has the shape of those tables (sameLayout); else null: a file that
 * gives nothing, every body then the journal's copy or lost, every cold row lost (counted by the store:
 * reconcileColdRows).
 */
function readableSource(file: string): SqliteFile | null {
  const source = openToRead(file);
  if (source) return source;
  const fresh = newHistoryFileBytes();
  const pageSize = pageSizeOf(fresh);
  const copy = copyWithFirstPage(file, fresh.subarray(0, pageSize));
  const through = openToRead(copy);
  if (through && sameLayout(through, copy, pageSize)) return through;
  through?.close();
  return null;
}

/** `file` opened read only, its schema read; null when SQLite finds it damaged there. */
function openToRead(file: string): SqliteFile | null {
  let source: SqliteFile | undefined;
  try {
    source = new SqliteFile(file, { readOnly: true });
    // writable_schema: a file shorter than its header says is read as far as it goes (cutBeforeOpen).
    source.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA writable_schema = ON;');
    source.all('SELECT name FROM sqlite_master');
    return source;
  } catch (err) {
    if (source?.isOpen) source.close();
    if (!CORRUPT.test(err instanceof Error ? err.message : String(err))) throw err;
    return null;
  }
}

/** B-tree page kinds (a page's first byte; page 1's after the file header): interior and leaf. */
const TABLE_PAGES = new Set([0x05, 0x0d]);
const INDEX_PAGES = new Set([0x02, 0x0a]);

/**
 * The first row of each table the salvage reads, by the types its columns must have: read through a
 * schema that is not the file's (another layout), a root page would give another table's rows, which
 * have other columns (a missing one reads NULL).
 */
const SHAPES: Array<{ sql: string; types: string[] }> = [
  { sql: 'SELECT typeof(key), typeof(conversation_id), typeof(role), typeof(content), typeof(cut) FROM bodies LIMIT 1', types: ['integer', 'text', 'text', 'text', 'integer'] },
  { sql: 'SELECT typeof(seq), typeof(id), typeof(conversation_id), typeof(timestamp), typeof(body_key) FROM cold_messages LIMIT 1', types: ['integer', 'text', 'text', 'text', 'integer'] },
  { sql: 'SELECT typeof(name), typeof(seq) FROM sqlite_sequence LIMIT 1', types: ['text', 'integer'] },
];

/**
 * Whether `copy` (opened as `db`, its page 1 a new file's) holds at each root page its schema names a
 * b-tree of that kind (a table's or an index's), and the first row of each table the salvage reads has
 * that table's shape. A root page damaged too (not a b-tree, or a row that cannot be read) says nothing
 * either way: the salvage's reads meet it as they meet any damaged page.
 */
function sameLayout(db: SqliteFile, copy: string, pageSize: number): boolean {
  const fd = openSync(copy, 'r');
  try {
    const kind = Buffer.alloc(1);
    for (const row of db.all('SELECT type, sql, rootpage FROM sqlite_master WHERE rootpage > 1')) {
      if (readSync(fd, kind, 0, 1, (Number(row.rootpage) - 1) * pageSize) < 1) continue;
      // A table WITHOUT ROWID (the search index's terms) is kept in an index's kind of b-tree.
      const table = row.type === 'table' && !/without\s+rowid/i.test(String(row.sql));
      const [mine, theirs] = table ? [TABLE_PAGES, INDEX_PAGES] : [INDEX_PAGES, TABLE_PAGES];
      if (theirs.has(kind[0]) && !mine.has(kind[0])) return false;
    }
  } finally {
    closeSync(fd);
  }
  return SHAPES.every(({ sql, types }) => {
    let row: Record<string, unknown> | undefined;
    try {
      row = db.get(sql) ?? undefined;
    } catch {
      return true; // damaged: no word on the layout
    }
    return row === undefined || Object.values(row).every((type, i) => type === types[i]);
  });
}

/** The highest key `db` (a history.db) ever gave out: its key counter. */
function keyCounter(db: SqliteFile): number {
  const row = db.get("SELECT seq FROM sqlite_sequence WHERE name = 'bodies'");
  return row ? Number(row.seq) : 0;
}

/** The damaged file's key counter where it can be read (through a new page 1 too), else 0. */
function readableKeyCounter(source: SqliteFile | null): number {
  try {
    return source ? keyCounter(source) : 0;
  } catch {
    return 0;
  }
}

function notOpened(file: string, err: unknown): Error {
  return new Error(`${file} could not be opened (${err instanceof Error ? err.message : String(err)}); the message bodies are kept there, so the store was not opened`);
}

/** A database in memory with history.db's schema. */
function inMemory(): SqliteFile {
  const db = new SqliteFile(SCRATCH);
  db.exec(SCHEMA);
  db.exec(COLD_SCHEMA);
  return db;
}

/** The error of an open that refuses `file`, damaged (`damage` says how). */
function refusedAsDamaged(file: string, damage: string): Error {
  return new Error(
    `${file} is damaged (${damage}), so the store was not opened and nothing was changed. ` +
      'To start anyway, run `remote-assistant serve --recover`: the messages whose bodies cannot be read then show a placeholder, and /health says degraded.',
  );
}

/** Size of `file`'s WAL in bytes; 0 when there is none. */
function walBytes(file: string): number {
  try {
    return lstatSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}

/** A history.db connection's settings, given at each open (`cut`: the file is cut short, read for the salvage). */
function configure(db: SqliteFile, cut: Cut | null): void {
  // locking_mode first: reading a WAL database in the normal mode would need the shared memory it lacks.
  db.exec('PRAGMA locking_mode = EXCLUSIVE');
  // A file cut short is read anyway, for the salvage (SQLite then takes the pages the file has).
  if (cut !== null) db.exec('PRAGMA writable_schema = ON');
  // auto_vacuum takes effect only before the first page is written (a file made empty: salvage), and
  // setting it writes page 1 even when it changes nothing: a file with pages is only read until `begin`.
  if (Number(db.get('PRAGMA page_count')?.page_count ?? 0) === 0) db.exec('PRAGMA auto_vacuum = INCREMENTAL');
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -16000;');
  const mode = db.get('PRAGMA journal_mode')?.journal_mode;
  if (mode !== 'wal') throw new Error(`journal_mode is ${String(mode)}, not wal`);
}

export class HistoryDb {
  private readonly db: SqliteFile;
  /** Why the file is damaged (found at open), null when the check found nothing; set only with `recover`. */
  readonly damage: string | null;
  /** An empty file whose WAL holds commits of a database this long (integrity.ts Cut): read by the salvage only. */
  private readonly walDatabaseBytes: number = 0;
  private damageNoted = false;
  /**
   * Counts syncs: bumped and committed with an fsync at open and by `sync`. service.db keeps the last
   * one it saw, so a history.db that lost commits it had made durable (not only the unsynced tail its
   * journaled bodies restore) is told apart at open (restore.ts).
   */
  readonly marks: SyncMarks = { before: 0, now: 0 };
  /** Whether commits fsync (PRAGMA synchronous FULL) or only write (NORMAL: the puts the journal holds). */
  private syncing = true;

  /**
   * With `recover`, a file found damaged at open is opened anyway (`damage` says why), for `salvage` to
   * read it into a new one, instead of refused. Opens and checks, writing nothing: `begin` writes.
   * `created`: the file was built aside just now (buildHistoryFileAside: no WAL, nothing in it to lose).
   */
  constructor(
    private readonly file: string,
    recover = false,
    private readonly created = false,
  ) {
    if (file === SCRATCH) {
      // In memory, with the file's schema: nothing of it is ever on disk (HistoryDb.scratch).
      this.db = inMemory();
      this.damage = null;
      return;
    }
    let cut: Cut | null;
    try {
      cut = cutBeforeOpen(file);
    } catch (err) {
      throw notOpened(file, err);
    }
    // Refused before SQLite opens it: closing it would checkpoint its WAL into the cut, filling it with zeros.
    if (cut !== null && !recover) throw refusedAsDamaged(file, cut.why);
    if (cut !== null && cut.walDatabaseBytes > 0) {
      // An empty file whose WAL holds commits: SQLite would delete the WAL at open. Neither is touched
      // before the salvage, which reads the WAL beside a copy of the file made as long as its database;
      // until then this reads as an empty database.
      this.db = inMemory();
      this.damage = cut.why;
      this.walDatabaseBytes = cut.walDatabaseBytes;
      return;
    }
    let damage: string | null;
    let opened: SqliteFile | undefined;
    // A WAL beside the file (a crash left it) is checked through a read-only connection first: SQLite opens
    // the WAL before it reads page 1, and closing a connection that may write checkpoints the WAL into the
    // file, so a refused open wrote the WAL's pages into the damaged file and deleted the WAL.
    const walFirst = cut === null && walBytes(file) > 0;
    try {
      // A file cut short is only read (the salvage's source): a read-only connection never checkpoints its
      // WAL into it, whatever closes it (a failed start under --recover included).
      this.db = opened = new SqliteFile(file, cut !== null || walFirst ? { readOnly: true } : undefined);
      configure(this.db, cut);
      damage = cut?.why ?? damageAtOpen(this.db);
      if (walFirst && damage === null) {
        // Whole: opened again to be written (the read-only connection's close leaves the WAL as it is).
        this.db.close();
        this.db = opened = new SqliteFile(file);
        configure(this.db, null);
      }
    } catch (err) {
      if (opened?.isOpen) opened.close();
      // SQLite cannot open it at all (its header or schema on a damaged page): damage as any other, for
      // --recover to rebuild (the salvage reads what it can: readableSource); other failures (no access) are not.
      if (!CORRUPT.test(err instanceof Error ? err.message : String(err))) throw notOpened(file, err);
      damage = `${cut ? `${cut.why}; ` : ''}it could not be opened: ${err instanceof Error ? err.message : String(err)}`;
      if (!recover) throw refusedAsDamaged(file, damage);
      // Read as an empty database until the salvage (which reads what the file gives: readableSource).
      this.db = inMemory();
      this.damage = damage;
      return;
    }
    if (damage !== null && !recover) {
      this.db.close();
      throw refusedAsDamaged(file, damage);
    }
    this.damage = damage;
  }

  /**
   * A database in memory with history.db's schema, in this worker: the warm-up's practice turn writes
   * its bodies there (history-worker.ts `practise`), so the worker's code and SQLite's WebAssembly for a
   * put (the search index's triggers included) are compiled before the first chat's, and nothing is written.
   */
  static scratch(): HistoryDb {
    return new HistoryDb(SCRATCH);
  }

  /**
   * The open's writes, made only once the data directory may be changed (service.db opened: a refused
   * open leaves history.db as it was, store/index.ts): the schema and the next sync mark. A damaged file
   * is only read from now on (a salvage into a new file follows: HistoryDb.salvage).
   */
  begin(): void {
    if (this.damage !== null) return;
    try {
      // The schema's statements (each its own commit; at a later open most change nothing) wait for
      // the open's transaction below to be durable: in WAL mode its fsync covers every frame written
      // before it, so a new file costs one fsync for its tables rather than one each. A crash before
      // it loses only tables that every open creates again.
      // A file built aside just now has every table already (buildHistoryFileAside ran the same two
      // schemas): running them again made SQLite parse and check each statement on the start's longest
      // path, after service.db opened, for nothing (docs/design.md, "Start-up").
      if (!this.created) {
        this.db.exec('PRAGMA synchronous = NORMAL');
        this.db.exec(SCHEMA);
        this.db.exec(COLD_SCHEMA);
        this.db.exec('PRAGMA synchronous = FULL');
      }
      // A write at every open creates the WAL file now, so the store can make its directory entry
      // durable and private before any body is acknowledged (history-store.ts).
      this.marks.before = this.readMark();
      this.marks.now = this.marks.before + 1;
      // A file made just now has no WAL yet and nothing to lose: its open's commit is not synced (nor the
      // new WAL's header, which SQLite syncs at synchronous FULL), and the sync the
      // store makes right after every open (restore.ts syncHistory) makes both durable with one fsync
      // before service.db notes a mark: 1 fsync of the WAL instead of 3 (docs/design.md, "What a start
      // makes durable"). A crash before it leaves an empty file at mark 0, which no service.db is ahead of.
      if (this.created) this.db.exec('PRAGMA synchronous = OFF');
      this.transaction(() => {
        this.db.run("INSERT OR REPLACE INTO history_meta (key, value) VALUES ('opened_at', ?)", [new Date().toISOString()]);
        this.writeMark(this.marks.now);
      });
      if (this.created) this.db.exec('PRAGMA synchronous = FULL');
    } catch (err) {
      this.close();
      throw notOpened(this.file, err);
    }
  }

  /**
   * Notes in the file that a read met damage (once), so the next open refuses it until `serve --recover`
   * rebuilds it, rather than serving it with /health ok until a read meets the damage again.
   */
  noteDamage(what: string): void {
    if (this.damageNoted) return;
    this.damageNoted = true;
    try {
      this.db.run('INSERT OR REPLACE INTO history_meta (key, value) VALUES (?, ?)', [DAMAGE_SEEN_KEY, `${new Date().toISOString()}: ${what}`]);
    } catch {
      // The page of history_meta is damaged too: this run still says degraded (history-store.ts).
    }
  }

  /** The highest key ever given out (keys are never reused). */
  maxKey(): number {
    return keyCounter(this.db);
  }

  /**
   * Stores bodies in one transaction under the keys the main thread gave them (history-store.ts: keys
   * only grow and are never given twice; one given again, a write tried again, is skipped). `durable`:
   * fsynced when it returns; otherwise only written (in the WAL, safe from a killed process but not
   * from a power loss) for a caller whose journal record holds them (record.ts), until the next durable
   * commit or `sync` covers them too.
   */
  put(bodies: readonly KeyedBody[], durable = true): void {
    try {
      this.transaction(() => {
        for (const b of bodies) {
          // `cut`: retention cut it while it waited to be written (history-store.ts `cut`).
          this.db.run('INSERT OR IGNORE INTO bodies (key, conversation_id, role, content, data, cut) VALUES (?, ?, ?, ?, ?, ?)', [b.key, b.conversation_id, b.role, b.content, b.data, b.cut ? 1 : 0]);
        }
      }, durable);
    } catch (err) {
      throw this.explain(
        err,
        bodies.reduce((n, b) => n + bodyChars(b), 0),
      );
    }
  }

  /**
   * Stores bodies under given keys (placeholders for bodies lost with a damaged file: `serve --recover`),
   * skipping keys present, and makes new keys start above `above`; how many were stored.
   */
  fill(bodies: readonly KeyedBody[], above: number): number {
    let stored = 0;
    this.transaction(() => {
      for (const b of bodies) {
        stored += this.db.run('INSERT OR IGNORE INTO bodies (key, conversation_id, role, content, data, cut) VALUES (?, ?, ?, ?, ?, ?)', [
          b.key,
          b.conversation_id,
          b.role,
          b.content,
          b.data,
          b.cut ? 1 : 0,
        ]).changes;
      }
      // AUTOINCREMENT gives out max(sqlite_sequence, largest key) + 1.
      if (this.maxKey() < above) {
        this.db.run("DELETE FROM sqlite_sequence WHERE name = 'bodies'");
        this.db.run("INSERT INTO sqlite_sequence (name, seq) VALUES ('bodies', ?)", [above]);
      }
    });
    return stored;
  }

  /**
   * Makes every commit so far durable (one fsync of the WAL, which holds them in order) with the next
   * sync mark; that mark.
   */
  sync(): number {
    // Also right after the open's own durable commit: service.db then notes a mark above the open's, so
    // a file that lost its WAL stays behind it even after one more open (test/service/history-damage.test.ts).
    const mark = this.marks.now + 1;
    this.transaction(() => this.writeMark(mark));
    this.marks.now = mark;
    return mark;
  }

  /**
   * Makes the sync mark at least `mark` (a rebuild's: service.db saw `mark` from the damaged file; a
   * rebuild's own marks started at 1, and with no write to note a newer one its next open took it for a
   * copy older than service.db: history.sync_mark_behind, its journaled bodies not put back).
   */
  markAtLeast(mark: number): void {
    if (this.marks.now >= mark) return;
    this.transaction(() => this.writeMark(mark));
    this.marks.now = mark;
  }

  private readMark(): number {
    const value = Number(this.db.get('SELECT value FROM history_meta WHERE key = ?', [SYNC_MARK_KEY])?.value ?? 0);
    return Number.isSafeInteger(value) && value > 0 ? value : 0;
  }

  private writeMark(mark: number): void {
    this.db.run('INSERT OR REPLACE INTO history_meta (key, value) VALUES (?, ?)', [SYNC_MARK_KEY, String(mark)]);
  }

  get(keys: readonly number[]): BodyOut[] {
    return bodiesOf(this.db, keys);
  }

  /**
   * Rebuilds a damaged history.db (`serve --recover`): the damaged file and its WAL are kept aside, as
   * they were, in a directory `history.db.damaged-<time>` (salvage-aside.ts: a salvage cut short at any
   * point is undone at the next open; never written again: read-only), a new history.db gets every body of
   * `refs` that can still be read, under its key, else its copy in `journaled` (the journal's), and
   * `placeholder` for the others; new keys start above `above`. history_meta is not read from the
   * damaged file: the new one's sync mark goes on from `mark` (service.db's: restore.ts), its open's
   * time is now, and no damage is noted in it. Returns the new database and what was kept.
   */
  static salvage(damaged: HistoryDb, refs: readonly BodyRef[], placeholder: string, above: number, journaled: readonly KeyedBody[], mark: number): { db: HistoryDb; result: SalvageResult } {
    const file = damaged.file;
    damaged.close();
    let db: HistoryDb | undefined;
    try {
      const moved = moveIntoSalvage(file);
      createRebuild(file);
      db = new HistoryDb(file);
      db.begin();
      db.markAtLeast(mark);
      const { kept, lost, maxKey } = HistoryDb.fillFrom(damaged.walDatabaseBytes > 0 ? readableCopy(moved, damaged.walDatabaseBytes) : moved, db, refs, placeholder, above, journaled);
      salvageFault('after-fill');
      return { db, result: { aside: keepAside(file), kept, lost, maxKey } };
    } catch (err) {
      // Nothing half done is left: the damaged file and its WAL back as they were (salvage-aside.ts).
      db?.close();
      undoSalvage(file);
      throw err;
    }
  }

  /** The salvage's copy of what `damagedFile` (read only) still gives into `db` (HistoryDb.salvage): counts kept and lost, and the highest key the rebuild gives out after. */
  private static fillFrom(
    damagedFile: string,
    db: HistoryDb,
    refs: readonly BodyRef[],
    placeholder: string,
    keysAbove: number,
    journaled: readonly KeyedBody[],
  ): { kept: number; lost: number; maxKey: number } {
    const source = readableSource(damagedFile);
    // A key is never given twice, a deleted message's neither: new keys start above the damaged file's
    // counter too, where it can be read now (the open could not read it when SQLite could not open the file).
    const above = Math.max(keysAbove, readableKeyCounter(source));
    // By key, the last journaled wins (records are in order).
    const fromJournal = new Map(journaled.map((b) => [b.key, b]));
    let kept = 0;
    let cold = { kept: 0, lost: 0 };
    try {
      for (const part of chunks(refs)) {
        const found = new Map(
          (source
            ? readableBodies(
                source,
                part.map((r) => r.key),
              )
            : []
          ).map((b) => [b.key, b]),
        );
        db.fill(
          part.map((r) => {
            const body = found.get(r.key) ?? fromJournal.get(r.key);
            if (!body) return { ...r, content: placeholder, data: null };
            kept++;
            return { ...r, content: body.content, data: body.data, cut: 'cut' in body ? body.cut : false };
          }),
          above,
        );
      }
      db.fill([], above);
      if (source) cold = salvageCold(source, db, placeholder, above);
    } finally {
      source?.close();
    }
    return { kept: kept + cold.kept, lost: refs.length - kept + cold.lost, maxKey: db.maxKey() };
  }

  /**
   * Keys in [from, to] no cold message refers to (for the sweep of bodies whose message never landed:
   * service.db is asked about the rest).
   */
  keysBetween(from: number, to: number): number[] {
    return this.db.all('SELECT key FROM bodies WHERE key BETWEEN ? AND ? AND NOT EXISTS (SELECT 1 FROM cold_messages WHERE body_key = bodies.key) ORDER BY key', [from, to]).map((r) => Number(r.key));
  }

  /**
   * Metadata moved out of sql.js, committed with an fsync and the next sync mark before sql.js lets go
   * of it (cold.ts); that mark, which sql.js notes with the move.
   */
  putCold(rows: readonly ColdMeta[]): number {
    return this.commitMarked(() => putCold(this.db, rows));
  }

  queryCold(query: ColdQuery): ColdRow[] {
    return queryCold(this.db, query);
  }

  /** Usage rows moving out of sql.js, as putCold: durable with the next sync mark, which is returned. */
  putColdUsage(rows: readonly ColdUsage[]): number {
    return this.commitMarked(() => putColdUsage(this.db, rows));
  }

  /** `write` committed with the next sync mark (durable: synchronous=FULL); that mark. */
  private commitMarked(write: () => void): number {
    const mark = this.marks.now + 1;
    this.transaction(() => {
      write();
      this.writeMark(mark);
    });
    this.marks.now = mark;
    return mark;
  }

  countCold(conversations: ReadonlyArray<[string, number]>): Array<[string, number]> {
    return countCold(this.db, conversations);
  }

  queryColdUsage(messageIds: readonly string[]): ColdUsage[] {
    return queryColdUsage(this.db, messageIds);
  }

  dropCold(conversationId: string, limit: number): number {
    let dropped = 0;
    this.transaction(() => (dropped = dropCold(this.db, conversationId, limit)));
    return dropped;
  }

  cutCold(cutoff: string, keepChars: number, note: string, minBytes: number, limit: number): ColdCutResult {
    let result: ColdCutResult = { rows: 0, deltas: [] };
    this.transaction(() => (result = cutCold(this.db, cutoff, keepChars, note, minBytes, limit)));
    return result;
  }

  remove(keys: readonly number[]): number {
    let removed = 0;
    this.transaction(() => {
      for (const part of chunks(keys)) removed += this.db.run(`DELETE FROM bodies WHERE key IN (${placeholders(part.length)})`, part).changes;
    });
    return removed;
  }

  /** Cuts bodies to their first `keepChars` characters plus `note`, once; the new byte sizes by key. */
  cut(keys: readonly number[], keepChars: number, note: string): Array<[number, number]> {
    const sizes: Array<[number, number]> = [];
    this.transaction(() => {
      for (const part of chunks(keys)) {
        this.db.run(`UPDATE bodies SET content = substr(content, 1, ?) || ?, cut = 1 WHERE cut = 0 AND key IN (${placeholders(part.length)})`, [keepChars, note, ...part]);
        for (const row of this.db.all(`SELECT key, length(CAST(content AS BLOB)) + coalesce(length(CAST(data AS BLOB)), 0) AS bytes FROM bodies WHERE key IN (${placeholders(part.length)})`, part)) {
          sizes.push([Number(row.key), Number(row.bytes)]);
        }
      }
    });
    return sizes;
  }

  /**
   * Newest first: FTS5 `match` over user and assistant bodies, optionally in one conversation. FTS5 walks
   * its index in rowid order, so LIMIT stops it early; prefix indexes (2-4 characters) keep a short
   * last word from expanding to every term that starts with it.
   */
  search(match: string, conversationId: string | null, limit: number): RawSearchHit[] {
    const snippet = `snippet(bodies_fts, 0, '${MARK_OPEN}', '${MARK_CLOSE}', '…', 16) AS snippet`;
    const rows =
      conversationId === null
        ? this.db.all(`SELECT rowid AS key, ${snippet} FROM bodies_fts WHERE bodies_fts MATCH ? ORDER BY rowid DESC LIMIT ?`, [match, limit])
        : this.db.all(
            `SELECT f.rowid AS key, ${snippet} FROM bodies_fts f JOIN bodies b ON b.key = f.rowid
             WHERE bodies_fts MATCH ? AND b.conversation_id = ? ORDER BY f.rowid DESC LIMIT ?`,
            [match, conversationId, limit],
          );
    return rows.map((r) => ({ key: Number(r.key), snippet: String(r.snippet) }));
  }

  /** Returns up to `pages` free pages to the file system; how many free pages remain. */
  vacuum(pages: number): number {
    this.db.exec(`PRAGMA incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
    // The file shrinks when the WAL is checkpointed into it; the WAL itself is cut back too.
    this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return this.stats().freePages;
  }

  /** Writes a consistent copy of the database (every committed body) to `file`, which must not exist. */
  copyTo(file: string): void {
    this.db.run('VACUUM INTO ?', [file]);
  }

  stats(): HistoryStats {
    const pageSize = this.readOr(() => Number(this.db.get('PRAGMA page_size')?.page_size ?? 0), 0);
    const pages = this.readOr(() => Number(this.db.get('PRAGMA page_count')?.page_count ?? 0), 0);
    const freePages = this.readOr(() => Number(this.db.get('PRAGMA freelist_count')?.freelist_count ?? 0), 0);
    // A damaged file's key counter may be past its end: the salvage's keys then start above every key
    // service.db refers to (store/index.ts referencedKey), which the lost counter cannot be below for a kept body.
    return { fileBytes: pageSize * pages, freePages, maxKey: this.readOr(() => this.maxKey(), 0), syncs: syncCount() };
  }

  /**
   * A read of a damaged file (opened only to be salvaged, --recover) may meet a page past its end:
   * `fallback` then; on a sound file the error is the caller's.
   */
  private readOr<T>(read: () => T, fallback: T): T {
    try {
      return read();
    } catch (err) {
      if (this.damage === null) throw err;
      return fallback;
    }
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }

  /**
   * The WASM file system layer reports every failed write as a plain "disk I/O error"; when the disk
   * has no room for the transaction, say so as the journal does (a full disk clears by itself).
   */
  private explain(err: unknown, bytes: number): unknown {
    try {
      const fs = statfsSync(path.dirname(this.file));
      if (fs.bavail * fs.bsize < 2 * bytes + (1 << 20)) return new Error(`${DISK_FULL}: could not write history.db (ENOSPC)`);
    } catch {
      // No statfs here: keep SQLite's error.
    }
    return err;
  }

  private transaction(fn: () => void, durable = true): void {
    if (durable !== this.syncing) {
      this.db.exec(`PRAGMA synchronous = ${durable ? 'FULL' : 'NORMAL'}`);
      this.syncing = durable;
    }
    this.db.exec('BEGIN IMMEDIATE');
    try {
      fn();
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      throw err;
    }
  }
}
