// A journal record's bytes are its format: `<crc32 of the JSON, 8 hex> <JSON>\n`. These are the bytes the
// code of 2026-11-27 (main at c614c8e) wrote for each record below, so a record written now is read by
// that code (and any older one) as it was, and what it wrote is read now.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import { encodeRecord, scanRecords } from '../../src/store/record';
import type { JournalRecord } from '../../src/store/record';

const records: JournalRecord[] = [
  { seq: 1, ops: [['CREATE TABLE t (a)', null]] },
  {
    seq: 2,
    ops: [
      ['INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)', ['plain', 42, null, -1.5]],
      ['UPDATE t SET a = ? WHERE b = ?', ['é ü 漢字 😀 \u2028 "quoted" \\ \n tab\t', 0]],
    ],
  },
  {
    seq: 3,
    ops: [['INSERT INTO blobs (k, v) VALUES (?, ?)', ['k', new Uint8Array([0, 1, 2, 250, 255])]]],
    bodies: [
      { key: 7, conversation_id: 'c1', role: 'user', content: 'body ✓', data: '{"x":1}' },
      { key: 8, conversation_id: 'c1', role: 'tool', content: 'cut', data: null, cut: true },
    ],
  },
  { seq: 4, ops: [], voids: 3 },
  { seq: 5, ops: [['DELETE FROM t', null]], bodies: [] },
  { seq: 6, ops: [['UPDATE t SET a = ?', ['lone \ud800 surrogate']]] },
  // Its CRC is under 0x10000000: written with its leading zero, 8 hex digits (review18e: none above had one).
  { seq: 130, ops: [['DELETE FROM t', null]] },
];

/** main's encodeRecord's output for `records`, base64. */
const yesterday = [
  'ZWQ1NzIwYzUgeyJzZXEiOjEsIm9wcyI6W1siQ1JFQVRFIFRBQkxFIHQgKGEpIl1dfQo=',
  'YjNiMjIwYzEgeyJzZXEiOjIsIm9wcyI6W1siSU5TRVJUIElOVE8gdCAoYSwgYiwgYywgZCkgVkFMVUVTICg/LCA/LCA/LCA/KSIsWyJwbGFpbiIsNDIsbnVsbCwtMS41XV0sWyJVUERBVEUgdCBTRVQgYSA9ID8gV0hFUkUgYiA9ID8iLFsiw6kgw7wg5ryi5a2XIPCfmIAg4oCoIFwicXVvdGVkXCIgXFwgXG4gdGFiXHQiLDBdXV19Cg==',
  'NjUyYTI5YjYgeyJzZXEiOjMsIm9wcyI6W1siSU5TRVJUIElOVE8gYmxvYnMgKGssIHYpIFZBTFVFUyAoPywgPykiLFsiayIseyJiIjoiQUFFQyt2OD0ifV1dXSwiYiI6W1s3LCJjMSIsInVzZXIiLCJib2R5IOKckyIsIntcInhcIjoxfSJdLFs4LCJjMSIsInRvb2wiLCJjdXQiLG51bGwsMV1dfQo=',
  'N2Y1YTVjMGUgeyJzZXEiOjQsIm9wcyI6W10sInYiOjN9Cg==',
  'MmI3ZTY1N2UgeyJzZXEiOjUsIm9wcyI6W1siREVMRVRFIEZST00gdCJdXX0K',
  'NjJlZGYyYzYgeyJzZXEiOjYsIm9wcyI6W1siVVBEQVRFIHQgU0VUIGEgPSA/IixbImxvbmUgXHVkODAwIHN1cnJvZ2F0ZSJdXV19Cg==',
  'MGJjYjkwYzMgeyJzZXEiOjEzMCwib3BzIjpbWyJERUxFVEUgRlJPTSB0Il1dfQo=',
];

test("a record's bytes are those yesterday's code wrote, byte for byte", () => {
  records.forEach((record, i) => assert.equal(encodeRecord(record).toString('base64'), yesterday[i], `record ${record.seq}`));
});

test("yesterday's bytes read back as the records they were written from", () => {
  const scanned = scanRecords(Buffer.concat(yesterday.map((b) => Buffer.from(b, 'base64'))));
  assert.equal(scanned.damaged.length, 0);
  assert.equal(scanned.tail, undefined);
  // An empty `bodies` is not written (a record without bodies reads back without them).
  assert.deepEqual(
    scanned.records,
    records.map((r) => (r.bodies?.length === 0 ? { seq: r.seq, ops: r.ops } : r)),
  );
});

/** The format's definition, as encodeRecord made it before its SQL texts' JSON was kept (s20): one JSON.stringify of the record. */
function reference(record: JournalRecord): Buffer {
  const param = (v: unknown) => (v instanceof Uint8Array ? { b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') } : v);
  const json = JSON.stringify({
    seq: record.seq,
    ops: record.ops.map(([sql, params]) => (params ? [sql, params.map(param)] : [sql])),
    ...(record.bodies && record.bodies.length > 0 ? { b: record.bodies.map((b) => [b.key, b.conversation_id, b.role, b.content, b.data, ...(b.cut ? [1] : [])]) } : {}),
    ...(record.voids !== undefined ? { v: record.voids } : {}),
  });
  return Buffer.from(`${crc32(json).toString(16).padStart(8, '0')} ${json}\n`, 'utf8');
}

test("a statement's text kept as JSON gives the same bytes each time, past the kept texts' bound and back", () => {
  // The same texts again and again (kept), texts that need escapes, and more distinct texts than are kept
  // (the store drops them all and starts again): every record's bytes are the reference's.
  const odd = ['UPDATE t SET a = "q" \\ \n \t \u2028 é 漢字 😀 WHERE b = ?', 'SELECT \ud800 lone', ''];
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 1_500; i++) {
      const record: JournalRecord = {
        seq: round * 10_000 + i + 1,
        ops: [
          [odd[i % odd.length], [i, 'x', null, new Uint8Array([i & 255])]],
          [`INSERT INTO t${i} (a) VALUES (?)`, [`v${i}`]],
          ['DELETE FROM t', null],
        ],
        ...(i % 2 === 0 ? { bodies: [{ key: i, conversation_id: 'c', role: 'user' as const, content: `b ${i} \u2028`, data: null }] } : {}),
      };
      const bytes = encodeRecord(record);
      assert.ok(bytes.equals(reference(record)), `round ${round}, record ${i}`);
      assert.deepEqual(scanRecords(bytes).records[0].ops, record.ops);
    }
  }
  for (const record of records) assert.ok(encodeRecord(record).equals(reference(record)), `record ${record.seq}`);
});
