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
   * A PRAGMA given a value is refused from its text before it is prepared (setsPragma).
   */
  read(sql: string): Statement {
    // A PRAGMA that sets takes effect as it is prepared (cache_size, journal_mode...): refused before.
    if (!this.statements.has(sql) && setsPragma(sql)) throw notReadOnly(sql);
    const stmt = this.get(sql);
    if (!this.reads.has(stmt)) {
      if (!isReadOnly(this.db, sql)) throw notReadOnly(sql);
      this.reads.add(stmt);
    }
    return stmt;
  }

  /** Prepares a statement ahead of its first use (Database.prepareAhead), found read-only now if it is, so its first read pays neither. */
  prepare(sql: string): void {
    if (!this.statements.has(sql) && setsPragma(sql)) return;
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
function notReadOnly(sql: string): Error {
  return new Error(`statement is not read-only, refused where reads run: ${sql}`);
}

/** A blank, a comment or an empty statement (`;`: sql.js prepares what follows it). */
const SKIPPED = String.raw`\s+|;|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/`;
/** What comes before a statement's first word. */
const EMPTY_LEAD = new RegExp(`^(?:${SKIPPED})*`);
/** The same and an EXPLAIN [QUERY PLAN] (EXPLAIN PRAGMA x(1) compiles, so applies, the pragma too). */
const LEAD = new RegExp(String.raw`^(?:${SKIPPED}|EXPLAIN\b(?:\s+QUERY\s+PLAN\b)?)*`, 'i');
/** A name as SQLite reads one: a word, or quoted ("x", [x], `x`, 'x'). */
const NAME = String.raw`(?:\w+|"[^"]*"|\[[^\]]*\]|\x60[^\x60]*\x60|'[^']*')`;
/** `PRAGMA [schema.]name` followed by `=` or `(`: the pragma's name and which of the two. */
const PRAGMA_ARGUMENT = new RegExp(String.raw`^PRAGMA\s+(?:${NAME}\s*\.\s*)?(${NAME})\s*([=(])`, 'i');
/** Pragmas whose argument in parentheses names what to read (a table, an index, a row limit), not a value to set. */
const READS_WITH_ARGUMENT = new Set(['table_info', 'table_xinfo', 'table_list', 'index_info', 'index_xinfo', 'index_list', 'foreign_key_list', 'foreign_key_check', 'integrity_check', 'quick_check']);

/**
 * Whether a statement is a PRAGMA given a value, `PRAGMA x = v` or `PRAGMA x(v)` (schema-qualified or
 * quoted too), other than a pragma that reads with an argument (table_info(t)...). Such a PRAGMA may
 * answer a row (max_page_count(10), locking_mode = NORMAL) and open no write transaction, so its EXPLAIN
 * cannot tell; many take effect as they are prepared (cache_size, journal_mode), so it is told from the
 * text, before anything prepares it. A PRAGMA with `=` or `(` in a shape not read here is refused too.
 */
function setsPragma(sql: string): boolean {
  const text = sql.replace(LEAD, '');
  if (!/^PRAGMA\b/i.test(text) || !/[=(]/.test(text)) return false;
  const match = PRAGMA_ARGUMENT.exec(text);
  if (!match || match[2] === '=') return true;
  return !READS_WITH_ARGUMENT.has(match[1].replace(/^["[`']|["\]`']$/g, '').toLowerCase());
}

/**
 * Whether a statement only reads: a SELECT (almost every read: nothing more to check), else as SQLite
 * compiled it (its EXPLAIN program; sql.js exposes no sqlite3_stmt_readonly): it yields rows (a read's
 * purpose: BEGIN, COMMIT, SAVEPOINT, VACUUM, a PRAGMA that sets, ATTACH yield none) and opens no write
 * transaction (an INSERT, UPDATE, DELETE or REPLACE, also under WITH or with RETURNING; DDL; a PRAGMA
 * that writes the file, as user_version = n).
 */
function isReadOnly(db: SqlJsDatabase, given: string): boolean {
  // What is prepared: sql.js skips empty statements before it (`;`), which the checks below must too.
  const sql = given.replace(EMPTY_LEAD, '');
  if (SELECT.test(sql)) return true;
  // A PRAGMA that sets (max_page_count = 10, journal_mode(DELETE)) may also return a row (review20b, fix21a).
  if (setsPragma(sql)) return false;
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
