// What damage on each page of history.db does, page by page, and whether anything hangs:
// `npx tsx bench/damage-sweep.ts [from] [to]` (0-based pages; default all). Not a benchmark and not a
// test (a hang took 2-155 pages to show): the probe that found s30's three faults (docs/design.md,
// "Threads end by terminate"): Node 20's worker-exit deadlock at a close, the key counter's page crashing
// the worker at open, and --recover saying "0 lost" over damaged cold rows.
//
// One store of 200 bulky cold messages (cold-history.test's damaged case), closed; then for each page a
// copy of it with that page overwritten, opened, read, closed, and opened with --recover. Each step has
// STEP_MS: a step that takes longer is printed as HANG (and the sweep goes on in the same process, as a
// service would). Prints one line a page: what was served, what /health said, what --recover said.
import { cp, mkdtemp, open as openFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HISTORY_FILE_NAME, LOST_BODY_TEXT, openStore } from '../src/store/index';
import { BULKY_NOW, bulkyContent } from '../test/helpers/store-utils';

const STEP_MS = 20_000;
const PAGE = 4096;
const OLD = BULKY_NOW - 30 * 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

function step<T>(what: string, run: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`HANG at ${what}`)), STEP_MS)));
  return Promise.race([run, hung]).finally(() => clearTimeout(timer));
}

async function fixture(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'damage-sweep-base-'));
  const store = await openStore(dir, { hotMessages: 0 });
  await store.conversations.create({ id: 'old', title: 'old', source: 'ws', created_at: iso(OLD) });
  for (let batch = 0; batch < 10; batch++) {
    const messages = Array.from({ length: 20 }, (_, j) => batch * 20 + j).map((i) => ({
      id: `o${i}`,
      conversation_id: 'old',
      role: 'user' as const,
      content: bulkyContent(i),
      timestamp: iso(OLD + i),
    }));
    await store.messages.appendMany(messages);
  }
  await store.maintenance.run();
  await store.close();
  return dir;
}

const short = (text: unknown) => String(text).slice(0, 110);

async function sweepPage(base: string, page: number): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'damage-sweep-'));
  try {
    await cp(base, dir, { recursive: true });
    const fh = await openFile(path.join(dir, HISTORY_FILE_NAME), 'r+');
    await fh.write(Buffer.alloc(PAGE, 0xff), 0, PAGE, page * PAGE);
    await fh.close();
    let line: string;
    try {
      const store = await step('open', openStore(dir));
      try {
        const read = await step('read', store.messages.recent('old', { limit: 1000 })).catch((err: unknown) => err);
        const served = Array.isArray(read) ? `served ${read.length}, ${read.filter((m) => m.content === LOST_BODY_TEXT).length} as lost` : `read failed: ${short(read)}`;
        line = `${served}; health: ${short(await step('problem', store.problem()))}`;
      } finally {
        await step('close', store.close());
      }
    } catch (err) {
      line = `refused: ${short(err)}`;
    }
    try {
      const recovered = await step('recover', openStore(dir, { recover: true }));
      try {
        const read = await step('read after recover', recovered.messages.recent('old', { limit: 1000 }));
        line += ` | recover: served ${read.length}, counted ${recovered.messages.count('old')}; ${short(await recovered.problem())}`;
      } finally {
        await step('close after recover', recovered.close());
      }
    } catch (err) {
      line += ` | recover: ${short(err)}`;
    }
    return line;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const base = await fixture();
  const pages = (await stat(path.join(base, HISTORY_FILE_NAME))).size / PAGE;
  const from = Number(process.argv[2] ?? 0);
  const to = Math.min(Number(process.argv[3] ?? pages), pages);
  console.log(`# history.db of 200 cold messages: ${pages} pages; sweeping ${from}-${to - 1}`);
  let hangs = 0;
  for (let page = from; page < to; page++) {
    const line = await sweepPage(base, page);
    if (line.includes('HANG at')) hangs++;
    console.log(`${page}: ${line}`);
  }
  console.log(`# ${to - from} pages, ${hangs} with a hang`);
  await rm(base, { recursive: true, force: true });
  // A hung thread keeps the process: leave anyway once the sweep printed its end.
  process.exit(hangs > 0 ? 1 : 0);
}

void main();
