import { wellFormed } from '../protocol/code-points';
import { createHash } from 'node:crypto';
import type { AuditEntry, AuditKind, AuditPerson, AuditPlace } from '../protocol/audit';
import type { Database, SqlParamInput, WriteTx } from './database';

/**
 * The audit log (docs/design.md, "The audit log"): who did what, from where. Append-only: no command
 * deletes or edits an entry; only retention (`audit.max_days`) drops the oldest, keeping the last
 * dropped entry's seq and hash as the chain's anchor. Each entry's hash covers the previous entry's hash
 * and the entry itself, so an edited or removed entry breaks the chain where verify() walks it.
 */

/** What an act records; seq, time and hash are the log's. */
export interface NewAuditEntry {
  kind: AuditKind;
  person: AuditPerson;
  place: AuditPlace;
  conversation_id?: string;
  summary: string;
  /** Kind-specific facts; never a secret's value. */
  detail?: Record<string, unknown>;
}

export interface AuditFilter {
  kinds?: readonly AuditKind[];
  /** A person's name, or a kind of person (`device`, `user`...). */
  person?: string;
  conversationId?: string;
  /** ISO times, inclusive. */
  since?: string;
  until?: string;
  /** Only entries older than this seq. */
  before?: number;
  limit: number;
}

export interface AuditVerdict {
  ok: boolean;
  entries: number;
  first_bad_seq: number | null;
  reason: string | null;
}

export const AUDIT_TABLES_SQL = `CREATE TABLE audit_log (seq INTEGER PRIMARY KEY, at TEXT NOT NULL, kind TEXT NOT NULL, person_kind TEXT NOT NULL, person_name TEXT NOT NULL, via TEXT NOT NULL, address TEXT, conversation_id TEXT, summary TEXT NOT NULL, detail TEXT NOT NULL, hash TEXT NOT NULL);
  CREATE INDEX audit_log_at ON audit_log (at);
  CREATE INDEX audit_log_kind ON audit_log (kind, seq);
  CREATE INDEX audit_log_person ON audit_log (person_name, seq);
  CREATE INDEX audit_log_conversation ON audit_log (conversation_id, seq) WHERE conversation_id IS NOT NULL;
  CREATE TABLE audit_chain (name TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL);`;

/** The hash before the first entry. */
export const AUDIT_GENESIS_HASH = '0'.repeat(64);

interface AuditRow {
  seq: number;
  at: string;
  kind: AuditKind;
  person_kind: AuditPerson['kind'];
  person_name: string;
  via: AuditPlace['via'];
  address: string | null;
  conversation_id: string | null;
  summary: string;
  detail: string;
  hash: string;
}

interface ChainPoint {
  seq: number;
  hash: string;
}

const COLUMNS = 'seq, at, kind, person_kind, person_name, via, address, conversation_id, summary, detail, hash';
/** Entries dropped by retention in one transaction. */
const PRUNE_BATCH = 2000;
/** Entries read at a time while verifying: about 20 ms of the event loop a page (50,000 entries verify in about 4 s in all). */
const VERIFY_PAGE = 250;

/** JSON with object keys sorted at every depth (and undefined left out): one text for one value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** An entry's hash: sha256 (hex) of the previous hash followed by the entry's canonical JSON without `hash`. */
export function auditHash(previousHash: string, entry: Omit<AuditEntry, 'hash'>): string {
  return createHash('sha256').update(previousHash).update(canonicalJson(entry)).digest('hex');
}

function entryOf(row: AuditRow): AuditEntry {
  return {
    seq: row.seq,
    at: row.at,
    kind: row.kind,
    person: { kind: row.person_kind, name: row.person_name },
    place: { via: row.via, ...(row.address !== null ? { address: row.address } : {}) },
    ...(row.conversation_id !== null ? { conversation_id: row.conversation_id } : {}),
    summary: row.summary,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
    hash: row.hash,
  };
}

function chainPoint(db: Pick<WriteTx, 'get'>, name: 'anchor' | 'head'): ChainPoint {
  return db.get<ChainPoint>('SELECT seq, hash FROM audit_chain WHERE name = ?', [name]) ?? { seq: 0, hash: AUDIT_GENESIS_HASH };
}

export class AuditRepo {
  private readonly listeners = new Set<(entry: AuditEntry) => void>();
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly db: Database,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Appends an entry inside the caller's transaction (the act and its record commit together, or
   * neither). Listeners hear of it once that transaction is durable.
   */
  record(tx: WriteTx, input: NewAuditEntry): AuditEntry {
    const head = chainPoint(tx, 'head');
    const body: Omit<AuditEntry, 'hash'> = {
      seq: head.seq + 1,
      at: new Date(this.now()).toISOString(),
      kind: input.kind,
      // Its texts well-formed as stored (a lone surrogate, say from a model-chosen path in a webhook's tool
      // run, reads back from sql.js as U+FFFD): hashed as they read back, or verify() sees a changed entry
      // (review20b).
      person: { ...input.person, name: wellFormed(input.person.name) },
      place: input.place.address === undefined || input.place.address === null ? input.place : { ...input.place, address: wellFormed(input.place.address) },
      ...(input.conversation_id !== undefined ? { conversation_id: input.conversation_id } : {}),
      summary: wellFormed(input.summary),
      detail: input.detail ?? {},
    };
    const entry: AuditEntry = { ...body, hash: auditHash(head.hash, body) };
    tx.run(`INSERT INTO audit_log (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      entry.seq,
      entry.at,
      entry.kind,
      entry.person.kind,
      entry.person.name,
      entry.place.via,
      entry.place.address ?? null,
      entry.conversation_id ?? null,
      entry.summary,
      JSON.stringify(entry.detail),
      entry.hash,
    ]);
    tx.run("INSERT INTO audit_chain (name, seq, hash) VALUES ('head', ?, ?) ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, hash = excluded.hash", [entry.seq, entry.hash]);
    // write() commits or rolls back synchronously after this callback: by the microtask, the row is there
    // or not. Told once durable (nothing goes outward before: the journal's barrier, as reads wait for it:
    // commands/durable-read.ts). Not told when the barrier fails (a full disk refused the write: the
    // entry, owed, is written later and listed then; a failed journal): its writer hears the error.
    queueMicrotask(() => {
      if (this.listeners.size === 0) return;
      if (this.db.get<{ hash: string }>('SELECT hash FROM audit_log WHERE seq = ?', [entry.seq])?.hash !== entry.hash) return;
      this.db.readable().then(
        () => {
          for (const listener of this.listeners) listener(entry);
        },
        () => undefined,
      );
    });
    return entry;
  }

  /**
   * An act outside the store (a config file change, a backup, a login): its entries recorded in one
   * transaction of their own, durable when this resolves.
   */
  append(...inputs: NewAuditEntry[]): Promise<AuditEntry[]> {
    const write = this.db.write((tx) => inputs.map((input) => this.record(tx, input)));
    const forget = (): void => void this.pending.delete(done);
    const done: Promise<void> = write.then(forget, forget);
    this.pending.add(done);
    return write;
  }

  /** Resolves once every append() started before the call has finished (an answer waits for its act's record). */
  async settled(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  /** Told of each entry once committed (the owner's `audit.appended` event). Returns the unsubscribe. */
  onAppended(listener: (entry: AuditEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Newest first; `next_before` is the seq to page on from, null when nothing older matches. */
  list(filter: AuditFilter): { entries: AuditEntry[]; next_before: number | null } {
    const where: string[] = [];
    const params: SqlParamInput[] = [];
    if (filter.kinds && filter.kinds.length > 0) {
      where.push(`kind IN (${filter.kinds.map(() => '?').join(', ')})`);
      params.push(...filter.kinds);
    }
    if (filter.person !== undefined) {
      where.push('(person_name = ? OR person_kind = ?)');
      params.push(filter.person, filter.person);
    }
    if (filter.conversationId !== undefined) {
      where.push('conversation_id = ?');
      params.push(filter.conversationId);
    }
    if (filter.since !== undefined) {
      where.push('at >= ?');
      params.push(filter.since);
    }
    if (filter.until !== undefined) {
      where.push('at <= ?');
      params.push(filter.until);
    }
    if (filter.before !== undefined) {
      where.push('seq < ?');
      params.push(filter.before);
    }
    const rows = this.db.all<AuditRow>(`SELECT ${COLUMNS} FROM audit_log ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`, [...params, filter.limit + 1]);
    const entries = rows.slice(0, filter.limit).map(entryOf);
    return { entries, next_before: rows.length > filter.limit ? entries[entries.length - 1].seq : null };
  }

  /**
   * Walks the chain from its anchor: every seq present, in order, each hash recomputed from the one
   * before, and the last entry the head the log recorded (so entries cut from the end are found too).
   * A page at a time, yielding between pages (a long log must not hold the event loop).
   */
  async verify(): Promise<AuditVerdict> {
    let previous = chainPoint(this.db, 'anchor');
    let checked = 0;
    const bad = (seq: number, reason: string): AuditVerdict => ({ ok: false, entries: checked, first_bad_seq: seq, reason });
    for (;;) {
      const rows = this.db.all<AuditRow>(`SELECT ${COLUMNS} FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?`, [previous.seq, VERIFY_PAGE]);
      for (const row of rows) {
        if (row.seq !== previous.seq + 1) {
          // Retention may have dropped entries while this walked: go on from the new anchor.
          const anchor = chainPoint(this.db, 'anchor');
          if (anchor.seq >= row.seq - 1 && anchor.seq > previous.seq) {
            previous = anchor;
            if (row.seq !== anchor.seq + 1) return bad(anchor.seq + 1, `entry ${anchor.seq + 1} is missing`);
          } else {
            return bad(previous.seq + 1, `entry ${previous.seq + 1} is missing`);
          }
        }
        let entry: AuditEntry;
        try {
          entry = entryOf(row);
        } catch {
          return bad(row.seq, `entry ${row.seq} is unreadable`);
        }
        const { hash, ...body } = entry;
        if (auditHash(previous.hash, body) !== hash) return bad(row.seq, `entry ${row.seq} was changed, or the one before it`);
        previous = { seq: row.seq, hash };
        checked += 1;
      }
      if (rows.length < VERIFY_PAGE) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const head = chainPoint(this.db, 'head');
    if (previous.seq !== head.seq || previous.hash !== head.hash) {
      return bad(previous.seq + 1, previous.seq < head.seq ? `entries ${previous.seq + 1} to ${head.seq} are missing` : `the record's last entry (${head.seq}) does not match`);
    }
    return { ok: true, entries: checked, first_bad_seq: null, reason: null };
  }

  /**
   * Retention: drops entries recorded before `cutoff` (ISO), oldest first, in batches; the last one
   * dropped becomes the anchor the chain is verified from. Returns how many were dropped.
   */
  async prune(cutoff: string): Promise<number> {
    let dropped = 0;
    for (;;) {
      const n = await this.db.write((tx) => {
        const rows = tx.all<{ seq: number; hash: string }>('SELECT seq, hash FROM audit_log WHERE at < ? ORDER BY seq LIMIT ?', [cutoff, PRUNE_BATCH]);
        if (rows.length === 0) return 0;
        const last = rows[rows.length - 1];
        tx.run('DELETE FROM audit_log WHERE seq <= ?', [last.seq]);
        tx.run("INSERT INTO audit_chain (name, seq, hash) VALUES ('anchor', ?, ?) ON CONFLICT (name) DO UPDATE SET seq = excluded.seq, hash = excluded.hash", [last.seq, last.hash]);
        return rows.length;
      });
      dropped += n;
      if (n < PRUNE_BATCH) return dropped;
    }
  }
}
