// An attacker's afternoon (s33, probe33): a finished upload that no message carries was kept for good,
// its bytes in the blob store, and nothing bounded how many one person could leave: a password user
// (or any user client) could fill the machine's disk with uploads nobody ever sees, as fast as the
// LAN carries them (the 60 MiB bound is on uploads in progress only). Now each person keeps at most
// MAX_UNSENT_ATTACHMENTS their newest unsent uploads (and MAX_UNSENT_ATTACHMENT_BYTES): an older one is
// dropped when a newer one is finished, its bytes removed when nothing else refers to them. Another
// person's uploads and every sent attachment are untouched. Real sockets, a real data directory.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { unsentBeyondBound } from '../../src/commands/attachment-uploads';
import { MAX_UNSENT_ATTACHMENTS } from '../../src/protocol';
import { BLOBS_DIR_NAME } from '../../src/store/blob-store';
import { downloadAttachment, sha256, uploadAttachment } from '../helpers/attachments';
import { sessionClient } from '../helpers/service';
import type { TestClient } from '../helpers/ws-client';
import { TWO_PEOPLE_PASSWORD, useTwoPeople } from '../helpers/two-people';

type Frame = Record<string, unknown>;
const { svc, ada, bob } = useTwoPeople({ workspace: true });

const requestOf = (client: TestClient) => (frame: Frame) => client.request(frame);
const blobPresent = (bytes: Buffer) => {
  const hash = sha256(bytes);
  return stat(path.join(svc.dataDir, BLOBS_DIR_NAME, hash.slice(0, 2), hash)).then(
    () => true,
    () => false,
  );
};

async function upload(client: TestClient, bytes: Buffer, name: string): Promise<string> {
  const done = await uploadAttachment(requestOf(client), bytes, name, 'text/plain');
  assert.equal(done.status, 'ok', JSON.stringify(done));
  return (done.data as { attachment_id: string }).attachment_id;
}

const unique = (label: string) => Buffer.from(`${label} ${randomUUID()}\n`);

test('attack: a password user piling up uploads it never sends keeps only its newest; the older ones and their bytes go, nobody else’s', async () => {
  const owner = await svc.client();
  const shared = unique('sent and uploaded again');
  // Another person's unsent upload, and the owner's: not ada's to push out.
  const bobs = await upload(bob(), unique('bob'), 'bob.txt');
  const owners = await upload(owner, unique('owner'), 'owner.txt');
  // ada sends one (a message carries it), then uploads the same bytes again and never sends them.
  const sent = await upload(ada(), shared, 'sent.txt');
  svc.fake.script({ text: 'Read it.' });
  const chat = await ada().request({ type: 'chat', message: 'see attached', attachments: [sent] });
  assert.equal(chat.status, 'ok', JSON.stringify(chat));
  const again = await upload(ada(), shared, 'again.txt');
  const firstBytes = unique('first unsent');
  const first = await upload(ada(), firstBytes, 'first.txt');

  const newest: string[] = [];
  for (let i = 0; i < MAX_UNSENT_ATTACHMENTS; i++) newest.push(await upload(ada(), unique(`pile ${i}`), `pile-${i}.txt`));

  for (const id of [again, first]) {
    const read = await ada().request({ type: 'get_attachment', attachment_id: id, offset: 0 });
    assert.equal(read.code, 'not_found', `the older unsent upload ${id} is dropped: ${JSON.stringify(read)}`);
  }
  assert.equal(await blobPresent(firstBytes), false, 'its bytes are gone from the blob store');
  assert.equal(await blobPresent(shared), true, 'bytes a sent message still carries stay');
  assert.deepEqual(await downloadAttachment(requestOf(owner), sent), shared, 'the sent attachment reads as before');
  for (const id of newest) assert.equal((await ada().request({ type: 'get_attachment', attachment_id: id, offset: 0 })).status, 'ok', 'the newest are kept');
  assert.equal((await bob().request({ type: 'get_attachment', attachment_id: bobs, offset: 0 })).status, 'ok', "bob's upload is untouched");
  assert.equal((await owner.request({ type: 'get_attachment', attachment_id: owners, offset: 0 })).status, 'ok', "the owner's upload is untouched");
  // The newest may still be sent.
  svc.fake.script({ text: 'Read them.' });
  const later = await ada().request({ type: 'chat', message: 'these', attachments: newest.slice(-2) });
  assert.equal(later.status, 'ok', JSON.stringify(later));
  owner.close();
});

test('attack: uploads from many sockets at once (their collections overlapping) keep no more than the bound on disk', async () => {
  // Each finished upload drops the person's oldest unsent one and collects its bytes; with 32 sockets the
  // collections overlapped without a gap, and a blob put while any ran was left by all: 444 of 960 uploads'
  // blobs stayed where the bound is 20 (s36, review36; blob-collect-slices.test has the race alone).
  const sockets = await Promise.all(Array.from({ length: 24 }, () => sessionClient(svc, 'ada', TWO_PEOPLE_PASSWORD)));
  const sent: Buffer[] = [];
  try {
    await Promise.all(
      sockets.map(async (socket, s) => {
        for (let i = 0; i < 20; i++) {
          const bytes = unique(`socket ${s} upload ${i}`);
          sent.push(bytes);
          await upload(socket, bytes, `s${s}-${i}.txt`);
        }
      }),
    );
  } finally {
    for (const socket of sockets) socket.close();
  }
  let present = 0;
  for (const bytes of sent) if (await blobPresent(bytes)) present += 1;
  assert.equal(present, MAX_UNSENT_ATTACHMENTS, `of ${sent.length} uploads, the newest ${MAX_UNSENT_ATTACHMENTS} keep their bytes, no more`);
});

test('the bound by bytes: the newest files that fit are kept, the newest always, whatever its size', () => {
  const rows = (...sizes: number[]) => sizes.map((size, i) => ({ id: `a${i}`, size }));
  assert.deepEqual(unsentBeyondBound(rows(10, 10, 10), 5, 25), rows(10, 10, 10).slice(2));
  assert.deepEqual(unsentBeyondBound(rows(40, 1), 5, 25), rows(40, 1).slice(1), 'one larger than the bound is kept alone');
  assert.deepEqual(unsentBeyondBound(rows(1, 1, 1), 2, 100), rows(1, 1, 1).slice(2), 'and by count');
  assert.deepEqual(unsentBeyondBound(rows(1, 1), 2, 2), [], 'exactly at the bound: nothing goes');
  assert.deepEqual(unsentBeyondBound([], 2, 2), []);
});
