// Worker thread entry (bundled to dist/history-worker.js): owns history.db, so its fsyncs and page
// reads never run on the service's event loop. Requests are handled in arrival order; puts that
// arrive while a commit runs are committed together in the next transaction (group commit).
import { closeSync, existsSync, openSync, renameSync, rmSync } from 'node:fs';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { PRIVATE_FILE_MODE } from '../../platform/file-modes';
import { stayUntilTerminated } from '../../platform/worker-thread';
import type { MessagePort } from 'node:worker_threads';
import { buildHistoryFileAside, HistoryDb, newHistoryFileBytes, removeBuildAside } from './history-db';
import { CORRUPT } from './protocol';
import { SALVAGE_UNDONE, undoSalvage } from './salvage-aside';
import { countSyncs } from './sync-count';
import type { HistoryWorkerStart } from './start-worker';
import type { HistoryReplies, HistoryRequest, WorkerAnswer, WorkerInbound, WorkerOutbound } from './protocol';

type Job = Extract<WorkerInbound, { request: HistoryRequest }>;
type Later = Exclude<WorkerInbound, { prepare: string } | { open: string } | { begin: boolean } | { practise: MessagePort }>;

function handle(db: HistoryDb, request: HistoryRequest): HistoryReplies[keyof HistoryReplies] {
  switch (request.op) {
    case 'put':
      db.put(request.bodies, request.durable);
      return null;
    case 'sync':
      return db.sync();
    case 'get':
      return db.get(request.keys);
    case 'fill':
      return db.fill(request.bodies, request.above);
    case 'salvage':
      throw new Error('salvage is handled by run()');
    case 'keys':
      return db.keysBetween(request.from, request.to);
    case 'remove':
      return db.remove(request.keys);
    case 'cut':
      return db.cut(request.keys, request.keepChars, request.note);
    case 'search':
      return db.search(request.match, request.conversationId, request.limit);
    case 'vacuum':
      return db.vacuum(request.pages);
    case 'copy':
      db.copyTo(request.file);
      return null;
    case 'stats':
      return db.stats();
    case 'coldPut':
      return db.putCold(request.rows);
    case 'cold':
      return db.queryCold(request.query);
    case 'coldUsagePut':
      return db.putColdUsage(request.rows);
    case 'coldCount':
      return db.countCold(request.conversations);
    case 'coldUsage':
      return db.queryColdUsage(request.messageIds);
    case 'coldDrop':
      return db.dropCold(request.conversationId, request.limit);
    case 'coldCut':
      return db.cutCold(request.cutoff, request.keepChars, request.note, request.minBytes, request.limit);
  }
}

function run(port: MessagePort, opened: HistoryDb): void {
  let db = opened;
  let queue: Job[] = [];
  let scheduled = false;
  const reply = (message: WorkerOutbound) => port.postMessage(message);
  const fail = (id: number, err: unknown) => {
    const error = err instanceof Error ? err.message : String(err);
    if (CORRUPT.test(error)) db.noteDamage(error);
    reply({ id, ok: false, error });
  };

  const drain = () => {
    scheduled = false;
    const jobs = queue;
    queue = [];
    for (let i = 0; i < jobs.length;) {
      if (jobs[i].request.op !== 'put') {
        const job = jobs[i++];
        try {
          if (job.request.op === 'salvage') {
            // The damaged database is closed and replaced: later requests use the rebuilt one.
            const { refs, placeholder, above, journaled, mark } = job.request;
            const salvaged = HistoryDb.salvage(db, refs, placeholder, above, journaled, mark);
            db = salvaged.db;
            reply({ id: job.id, ok: true, value: salvaged.result });
            continue;
          }
          reply({ id: job.id, ok: true, value: handle(db, job.request) });
        } catch (err) {
          fail(job.id, err);
        }
        continue;
      }
      // Consecutive puts: one transaction, and one fsync if any of them asks for it.
      const group: Job[] = [];
      while (i < jobs.length && jobs[i].request.op === 'put') group.push(jobs[i++]);
      const puts = group.map((job) => job.request as Extract<HistoryRequest, { op: 'put' }>);
      let answers: WorkerAnswer[];
      try {
        db.put(
          puts.flatMap((put) => put.bodies),
          puts.some((put) => put.durable),
        );
        answers = group.map((job) => ({ id: job.id, ok: true, value: null }));
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        if (CORRUPT.test(error)) db.noteDamage(error);
        answers = group.map((job) => ({ id: job.id, ok: false, error }));
      }
      reply({ answers });
    }
  };

  port.on('message', (message: Later | { practise: MessagePort }) => {
    if ('practise' in message) {
      practise(message.practise);
      return;
    }
    if ('close' in message) {
      drain();
      db.close();
      reply({ id: message.id, ok: true, value: null });
      return;
    }
    queue.push(message);
    if (!scheduled) {
      scheduled = true;
      setImmediate(drain);
    }
  });
}

/**
 * The warm-up's practice turn (HistoryStore.scratch): the same loop over a database in memory, on a
 * channel of its own, so the code a put and a get run here (and SQLite's WebAssembly for them) is
 * compiled before the first chat's, and history.db sees none of it. Closed with its channel.
 */
function practise(port: MessagePort): void {
  const db = HistoryDb.scratch();
  port.once('close', () => db.close());
  run(port, db);
}

/**
 * Before SQLite opens `file`: node-sqlite3-wasm locks a database with a `<file>.lock` directory, which a
 * killed process leaves behind (service.lock already makes this process the only one using the
 * directory), and a new file is created private (SQLite would use the umask). Here rather than in the
 * service's thread, so that the open does not wait for that thread's start-up work. Answers the new file
 * built aside, when there was none: renamed in only once service.db opened (`built`: its bytes, made
 * before the lock by `prepare`).
 */
function prepareFile(file: string, built: Buffer | undefined): string | undefined {
  rmSync(`${file}.lock`, { recursive: true, force: true });
  if (!isThere(file)) return buildHistoryFileAside(file, PRIVATE_FILE_MODE, built);
  else {
    // A build aside cut short by a crash, where the file (or its WAL) is there: litter, nothing more.
    removeBuildAside(file);
    closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
    return undefined;
  }
}

/** Whether history.db (or a WAL of it) is there: then the open opens it rather than making a new one. */
function isThere(file: string): boolean {
  return existsSync(file) || existsSync(`${file}-wal`);
}

/**
 * A new history.db's bytes, built before the lock when there is no such file now (checked again under the
 * lock: prepareFile); undefined when there is one, or the build failed (the open then builds in place,
 * and meets the same error there if it was not the temporary directory's).
 */
function prebuild(file: string): Buffer | undefined {
  try {
    return isThere(file) ? undefined : newHistoryFileBytes();
  } catch {
    return undefined;
  }
}

if (!isMainThread && parentPort) {
  countSyncs();
  // ICU's data is the process's, shared by its threads: loaded here, the first Intl.DateTimeFormat of the
  // service's thread (the turn's note asks it the time zone's name, environment.ts: the early warm-up
  // at listening, between listening and the first command's answer) takes 0.3 ms instead of 14-22 ms of
  // CPU and 20-110 ms of wall clock (docs/design.md, "Listening to ready").
  // A Node without Intl throws: the preload is only a head start, never a reason for the worker to fail.
  if ((workerData as HistoryWorkerStart | null)?.loadTimeZones) {
    try {
      Intl.DateTimeFormat().resolvedOptions();
    } catch {
      // the service's thread meets it at its own first use
    }
  }
  const port = parentPort;
  // Whether the open was refused or the store closed, the store's thread terminates this one.
  stayUntilTerminated(port);
  let built: Buffer | undefined;
  port.once('message', function opening(first: WorkerInbound) {
    if ('prepare' in first) {
      built = prebuild(first.prepare);
      port.once('message', opening);
      return;
    }
    if (!('open' in first)) return;
    // A salvage (serve --recover) cut short: the damaged file and its WAL back as they were, first; said
    // with the open's answer (or its refusal), since they are no longer where that salvage left them.
    let salvageUndone = false;
    const refuse = (error: string) => {
      port.postMessage({ ready: false, error: salvageUndone ? `${error} (${SALVAGE_UNDONE})` : error } satisfies WorkerOutbound);
    };
    let db: HistoryDb | undefined;
    let aside: string | undefined;
    try {
      salvageUndone = undoSalvage(first.open);
      aside = prepareFile(first.open, built);
      built = undefined;
      if (!aside) db = new HistoryDb(first.open, first.recover);
    } catch (err) {
      refuse(err instanceof Error ? err.message : String(err));
      return;
    }
    // Checked (or built aside), nothing written: the open's writes wait for the word that service.db opened.
    port.once('message', (next: WorkerInbound) => {
      if (!('begin' in next) || !next.begin) {
        db?.close();
        if (aside) removeBuildAside(first.open);
        refuse(`${first.open} was closed unchanged: the store's open failed`);
        return;
      }
      let opened: HistoryDb | undefined;
      let ready: Extract<WorkerOutbound, { ready: true }>;
      try {
        if (aside) renameSync(aside, first.open);
        // A file built aside just now has no WAL and nothing to lose: its open's commit need not be synced (history-db.ts).
        opened = db ?? new HistoryDb(first.open, first.recover, aside !== undefined);
        opened.begin();
        // In the try: a read the open's check did not make fails as a refusal, not as the thread's crash.
        ready = { ready: true, stats: opened.stats(), damage: opened.damage, marks: opened.marks, salvageUndone };
      } catch (err) {
        opened?.close();
        refuse(err instanceof Error ? err.message : String(err));
        return;
      }
      port.postMessage(ready);
      run(port, opened);
    });
  });
}
