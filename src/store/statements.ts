import type { Database as SqlJsDatabase, ParamsObject, SqlValue, Statement } from 'sql.js';
import type { SqlParam } from './record';

/** Prepared statements by SQL text, least recently used dropped first. */
export class StatementCache {
  private readonly statements = new Map<string, Statement>();
  /** Statements found read-only (`read`), checked once while prepared. */
  private readonly reads = new WeakSet<Statement>();

  constructor(
    private readonly db: SqlJsDatabase,
    private readonly max = 256,
  ) {}

  get(sql: string): Statement {
    const cached = this.statements.get(sql);
    if (cached) {
      this.statements.delete(sql);
      this.statements.set(sql, cached);
      return cached;
    }
    const stmt = this.db.prepare(sql);
    this.statements.set(sql, stmt);
    if (this.statements.size > this.max) {
      const [oldestSql, oldest] = this.statements.entries().next().value as [string, Statement];
      this.statements.delete(oldestSql);
      oldest.free();
    }
    return stmt;
  }

  /**
   * A statement for a read (queryAll, queryOne: Database.get/all, a write's tx.get/all), refused unless it
   * is read-only (isReadOnly): a write run there (an INSERT ... RETURNING gives rows like a read) would
   * change the database without a journal record (lost at a restart) and without the read memos' watches
   * (read-memo.ts). Checked once per prepared statement; the same text may still run as a write (runOp).
   */
  read(sql: string): Statement {
    const stmt = this.get(sql);
    if (!this.reads.has(stmt)) {
      if (!isReadOnly(this.db, sql)) throw new Error(`statement is not read-only, refused where reads run: ${sql}`);
      this.reads.add(stmt);
    }
    return stmt;
  }

  /** Prepares a statement ahead of its first use (Database.prepareAhead), found read-only now if it is, so its first read pays neither. */
  prepare(sql: string): void {
    const stmt = this.get(sql);
    if (!this.reads.has(stmt) && isReadOnly(this.db, sql)) this.reads.add(stmt);
  }

  /** The text of every statement kept, least recently used first. */
  texts(): string[] {
    return [...this.statements.keys()];
  }

  clear(): void {
    for (const stmt of this.statements.values()) stmt.free();
    this.statements.clear();
  }
}

/** A statement that begins with SELECT: SQLite has no way for one to write (no DML in a subquery; the statement prepared is the first). */
const SELECT = /^\s*SELECT\b/i;
/** A PRAGMA given a value with `=` (the form src would use; `PRAGMA x(v)` that sets is not caught here, and nothing uses it). */
const SETTING_PRAGMA = /^\s*PRAGMA\b[^;]*=/i;

/**
 * Whether a statement only reads: a SELECT (almost every read: nothing more to check), else as SQLite
 * compiled it (its EXPLAIN program; sql.js exposes no sqlite3_stmt_readonly): it yields rows (a read's
 * purpose: BEGIN, COMMIT, SAVEPOINT, VACUUM, a PRAGMA that sets, ATTACH yield none) and opens no write
 * transaction (an INSERT, UPDATE, DELETE or REPLACE, also under WITH or with RETURNING; DDL; a PRAGMA
 * that writes the file, as user_version = n).
 */
function isReadOnly(db: SqlJsDatabase, sql: string): boolean {
  if (SELECT.test(sql)) return true;
  // A PRAGMA that sets (max_page_count = 10, journal_mode = DELETE) may also return a row (review20b).
  if (SETTING_PRAGMA.test(sql)) return false;
  const explain = db.prepare(`EXPLAIN ${sql}`);
  try {
    let rows = false;
    while (explain.step()) {
      // addr, opcode, p1, p2, ...: a Transaction opcode's p2 is non-zero for a write transaction.
      const [, opcode, , p2] = explain.get();
      if (opcode === 'ResultRow') rows = true;
      else if (opcode === 'Transaction' && p2 !== 0) return false;
    }
    return rows;
  } finally {
    explain.free();
  }
}

/**
 * Runs one statement of a write, the same way live and at replay so both give the same result.
 * With parameters: one prepared (cached) statement, stepped once (SQLite makes all of an INSERT's
 * changes in its first step, a RETURNING clause's too: records of s19 builds hold one). Without:
 * sqlite3_exec, which allows several statements in one string (migrations). Returns the number of rows changed.
 */
export function runOp(db: SqlJsDatabase, cache: StatementCache, sql: string, params: readonly SqlParam[] | null): number {
  if (params && params.length > 0) {
    const stmt = cache.get(sql);
    try {
      stmt.bind(params as SqlValue[]);
      stmt.step();
    } finally {
      stmt.reset();
    }
  } else {
    db.run(sql);
  }
  return db.getRowsModified();
}

/**
 * BEGIN or COMMIT of a write transaction (live and at replay), through a statement prepared once:
 * `db.run` parses the text at every call (BEGIN 11 -> 7 us a write in a turn, timed; COMMIT's cost is
 * its work, not its text). A COMMIT refused leaves the transaction open (the caller rolls back).
 */
export function runControl(cache: StatementCache, sql: 'BEGIN' | 'COMMIT'): void {
  const stmt = cache.get(sql);
  try {
    stmt.run();
  } catch (err) {
    stmt.reset();
    throw err;
  }
}

export function queryAll(cache: StatementCache, sql: string, params: readonly SqlParam[] | null): ParamsObject[] {
  const stmt = cache.read(sql);
  try {
    if (params) stmt.bind(params as SqlValue[]);
    const rows: ParamsObject[] = [];
    if (!stmt.step()) return rows;
    // The columns' names asked once, not for each row as getAsObject does (half a row's cost, issue 25).
    const names = stmt.getColumnNames();
    do rows.push(rowObject(names, stmt.get()));
    while (stmt.step());
    return rows;
  } finally {
    stmt.reset();
  }
}

function rowObject(names: readonly string[], values: readonly SqlValue[]): ParamsObject {
  const row: ParamsObject = {};
  for (let i = 0; i < names.length; i += 1) row[names[i]] = values[i];
  return row;
}

export function queryOne(cache: StatementCache, sql: string, params: readonly SqlParam[] | null): ParamsObject | undefined {
  const stmt = cache.read(sql);
  try {
    if (params) stmt.bind(params as SqlValue[]);
    return stmt.step() ? stmt.getAsObject() : undefined;
  } finally {
    stmt.reset();
  }
}
