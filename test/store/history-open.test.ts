// Opening a new history.db (every start of a new data directory): its tables are made durable by the
// open's one transaction, not one fsync each (issue 25, the start row). Counted where they happen: the
// worker's fsyncs (HistoryStats.syncs, src/store/history/sync-count.ts), on a real file in a temp dir.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HistoryStore } from '../../src/store/history/history-store';
import { tempDir } from '../helpers/temp';

test("a new history.db's open costs the WAL's set-up and one commit, not a commit per table", async (t) => {
  const temp = await tempDir('ra-history-open-');
  t.after(temp.cleanup);
  const created = await HistoryStore.open(temp.dir);
  const atCreation = (await created.stats()).syncs;
  await created.close();
  const reopened = await HistoryStore.open(temp.dir);
  const atReopen = (await reopened.stats()).syncs;
  // The tables are there (the search index too).
  assert.deepEqual(await reopened.search('hello', null, 10), []);
  await reopened.close();
  // A reopen writes the open's transaction (and checks the file); a creation adds one fsync of the new
  // file, made whole aside (history-db.ts createHistoryFile). The 13 statements of the schema were once
  // 13 commits with an fsync each (21 fsyncs at creation), then turning the file to WAL in place and a
  // rollback journal's commits (9).
  assert.ok(atCreation <= atReopen + 1, `fsyncs at creation ${atCreation}, at a reopen ${atReopen}`);
});
