import { crc32 } from 'node:zlib';
import { packedMap } from '../platform/packed-map';
import type { KeyedBody } from './history/protocol';

/** A value as bound to a statement and stored in the journal. */
export type SqlParam = string | number | null | Uint8Array;
/** What callers may pass; booleans become 0/1 and undefined becomes NULL before anything runs. */
export type SqlParamInput = SqlParam | boolean | undefined;
/** One statement of a transaction: SQL text and its positional parameters (null: none). */
export type Op = readonly [sql: string, params: readonly SqlParam[] | null];

/** One journal record is one committed write transaction. */
export interface JournalRecord {
  seq: number;
  ops: Op[];
  /**
   * Message bodies the transaction's rows refer to, written to history.db before it but not yet made
   * durable there: this record is their one durable commit, and the open puts them back into a
   * history.db that lost them (store/history/restore.ts). Not SQL: replay into sql.js skips them.
   */
  bodies?: KeyedBody[];
  /**
   * A void record (no ops): the record of this seq, handed to the file before its statements ran
   * (Database.writePlanned), failed to apply and was rolled back; replay skips it. Always in the same
   * segment as that record (Journal.voidRecord).
   */
  voids?: number;
}

/** Bytes of a segment that are not records. */
export interface DamagedRange {
  /** Byte offset where the bad bytes start (the start of a line). */
  offset: number;
  length: number;
  /** What the first bad line was: torn, corrupt (checksum or format), or out of order. */
  problem: string;
}

export interface ScannedRecords {
  /** Every readable record, in file order. */
  records: JournalRecord[];
  /** Bad ranges that have a valid record after them: damage to committed data, not a crash. */
  damaged: DamagedRange[];
  /** Bad bytes after the last valid record, up to the end: a torn tail (a crash mid-write). */
  tail?: DamagedRange;
  /** Bytes from the start up to the end of the last valid record. */
  validBytes: number;
}

const NEWLINE = 0x0a;
const SPACE = 0x20;
const HEX8 = /^[0-9a-f]{8}$/;

export function normalizeParams(params: readonly SqlParamInput[] | null | undefined): SqlParam[] | null {
  if (!params || params.length === 0) return null;
  const out: SqlParam[] = new Array(params.length);
  for (let i = 0; i < params.length; i++) {
    const v = params[i];
    if (v === undefined || v === null) out[i] = null;
    else if (typeof v === 'boolean') out[i] = v ? 1 : 0;
    else if (typeof v === 'number') {
      // NaN and infinities do not survive JSON, so the journal could not replay them faithfully.
      if (!Number.isFinite(v)) throw new TypeError(`SQL parameter ${i + 1} is not a finite number (${v})`);
      out[i] = v;
    } else if (typeof v === 'string') out[i] = v;
    else if (v instanceof Uint8Array) out[i] = new Uint8Array(v);
    else throw new TypeError(`SQL parameter ${i + 1} has an unsupported type (${typeof v})`);
  }
  return out;
}

function encodeParam(v: SqlParam): unknown {
  return v instanceof Uint8Array ? { b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') } : v;
}

/** A statement's parameters as JSON (a blob as `{"b": base64}`). */
function paramsJson(params: readonly SqlParam[]): string {
  for (let i = 0; i < params.length; i++) if (params[i] instanceof Uint8Array) return JSON.stringify(params.map(encodeParam));
  return JSON.stringify(params);
}

/**
 * Statements' texts as JSON (quoted, escaped), kept: a turn's records repeat the same few long texts (a
 * message's INSERT and UPDATE, ~330 of a user message record's ~660 characters), and JSON.stringify
 * scanned every character of them again for each record. The JSON of a string is a function of the
 * string alone (the key): nothing to make stale. Bounded: past SQL_JSON_KEPT texts (statements made
 * with a varying number of `?`) all are dropped and kept again as met.
 */
const sqlJson = new Map<string, string>();
const SQL_JSON_KEPT = 1_000;

function sqlJsonOf(sql: string): string {
  let json = sqlJson.get(sql);
  if (json === undefined) {
    json = JSON.stringify(sql);
    if (sqlJson.size >= SQL_JSON_KEPT) sqlJson.clear();
    sqlJson.set(sql, json);
  }
  return json;
}

function decodeParam(v: unknown): SqlParam {
  if (v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v))) return v;
  if (typeof v === 'object' && typeof (v as { b?: unknown }).b === 'string') {
    return new Uint8Array(Buffer.from((v as { b: string }).b, 'base64'));
  }
  throw new Error('bad parameter');
}

function decodeBodies(value: unknown): KeyedBody[] {
  if (!Array.isArray(value)) throw new Error('bad bodies');
  return value.map((b: unknown) => {
    // A sixth element, 1, says the body is cut (retention's cut of a body held in memory, s15).
    if (!Array.isArray(b) || (b.length !== 5 && !(b.length === 6 && b[5] === 1))) throw new Error('bad body');
    const [key, conversation_id, role, content, data] = b as unknown[];
    if (!Number.isSafeInteger(key) || typeof conversation_id !== 'string' || typeof role !== 'string' || typeof content !== 'string' || (data !== null && typeof data !== 'string')) {
      throw new Error('bad body');
    }
    return { key: key as number, conversation_id, role: role as KeyedBody['role'], content, data, ...(b.length === 6 ? { cut: true } : {}) };
  });
}

/** The seqs these records void (a void record's `voids`): records replay skips. */
export function voidedSeqs(records: readonly JournalRecord[]): Set<number> {
  const voided = new Set<number>();
  for (const record of records) if (record.voids !== undefined) voided.add(record.voids);
  return voided;
}

/**
 * `<crc32 of json, 8 hex> <json>\n`: JSON escapes newlines, so one record is exactly one line. The JSON is
 * `JSON.stringify({ seq, ops, b?, v? })`'s, byte for byte (test/store/record-bytes.test.ts), put together
 * here so that a statement's text is not escaped again (sqlJsonOf). (Its UTF-8 written into one buffer and
 * the CRC taken of those bytes measured slower: a subarray and two encoded writes against `crc32` of the
 * string and one `Buffer.from`.)
 */
export function encodeRecord(record: JournalRecord): Buffer {
  let json = `{"seq":${JSON.stringify(record.seq)},"ops":[`;
  const ops = record.ops;
  for (let i = 0; i < ops.length; i++) {
    const [sql, params] = ops[i];
    json += `${i > 0 ? ',' : ''}[${sqlJsonOf(sql)}${params ? `,${paramsJson(params)}` : ''}]`;
  }
  json += ']';
  const bodies = record.bodies;
  if (bodies && bodies.length > 0) {
    json += `,"b":${JSON.stringify(packedMap(bodies, (b) => (b.cut ? [b.key, b.conversation_id, b.role, b.content, b.data, 1] : [b.key, b.conversation_id, b.role, b.content, b.data])))}`;
  }
  if (record.voids !== undefined) json += `,"v":${JSON.stringify(record.voids)}`;
  json += '}';
  const crc = crc32(json).toString(16).padStart(8, '0');
  return Buffer.from(`${crc} ${json}\n`, 'utf8');
}

function decodeLine(line: Buffer): JournalRecord | null {
  if (line.length < 10 || line[8] !== SPACE) return null;
  const hex = line.toString('latin1', 0, 8);
  if (!HEX8.test(hex)) return null;
  const body = line.subarray(9);
  if (crc32(body) !== parseInt(hex, 16)) return null;
  try {
    const value = JSON.parse(body.toString('utf8')) as { seq?: unknown; ops?: unknown; b?: unknown; v?: unknown };
    if (typeof value !== 'object' || value === null) return null;
    const { seq, ops, b, v } = value;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1 || !Array.isArray(ops)) return null;
    if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v >= seq || ops.length > 0)) return null;
    const decoded: Op[] = ops.map((op: unknown) => {
      if (!Array.isArray(op) || typeof op[0] !== 'string') throw new Error('bad op');
      const params = op[1];
      if (params === undefined || params === null) return [op[0], null] as const;
      if (!Array.isArray(params)) throw new Error('bad params');
      return [op[0], params.map(decodeParam)] as const;
    });
    const record: JournalRecord = b === undefined ? { seq, ops: decoded } : { seq, ops: decoded, bodies: decodeBodies(b) };
    if (v !== undefined) record.voids = v;
    return record;
  } catch {
    return null;
  }
}

/**
 * Reads every record of a segment. A line that is torn (no final newline), fails its CRC, is not a
 * well-formed record, or does not carry a seq greater than the last good one (`afterSeq` for the first)
 * is bad; reading resumes at the next line, since a record is exactly one line and a CRC-valid line
 * after damage is a record (a false match needs a 32-bit CRC collision that is also a valid record).
 * Bad bytes followed by a good record are `damaged`; bad bytes up to the end are the `tail`.
 */
export function scanRecords(buf: Buffer, afterSeq = 0): ScannedRecords {
  const records: JournalRecord[] = [];
  const damaged: DamagedRange[] = [];
  let bad: { offset: number; problem: string } | undefined;
  let pos = 0;
  let prev = afterSeq;
  let validBytes = 0;
  while (pos < buf.length) {
    const nl = buf.indexOf(NEWLINE, pos);
    const next = nl < 0 ? buf.length : nl + 1;
    const record = nl < 0 ? null : decodeLine(buf.subarray(pos, nl));
    if (!record || record.seq <= prev) {
      const problem = nl < 0 ? 'torn record (no end of line)' : !record ? 'corrupt record (checksum or format)' : `out-of-order record (seq ${record.seq} after ${prev})`;
      bad ??= { offset: pos, problem };
    } else {
      if (bad) damaged.push({ offset: bad.offset, length: pos - bad.offset, problem: bad.problem });
      bad = undefined;
      records.push(record);
      prev = record.seq;
      validBytes = next;
    }
    pos = next;
  }
  const tail = bad ? { offset: bad.offset, length: buf.length - bad.offset, problem: bad.problem } : undefined;
  return { records, damaged, tail, validBytes };
}
