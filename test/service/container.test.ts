/**
 * The Dockerfile's runtime stage holds only what it copies from the build stage. This runs exactly
 * that (its COPY sources, its ENTRYPOINT and CMD) from a folder with no node_modules anywhere above
 * it, so a bundle that still needs a package, or a file the COPY lines miss, fails here rather than in
 * a user's container. (No Docker engine runs on these machines; the image itself is not built.)
 */
import assert from 'node:assert/strict';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { spawn } from 'node:child_process';
import { tempDir } from '../helpers/temp';
import { TestClient } from '../helpers/ws-client';

const ROOT = join(__dirname, '..', '..');

interface RuntimeStage {
  copies: { from: string; to: string }[];
  runs: string[];
  command: string[];
}

function runtimeStage(dockerfile: string): RuntimeStage {
  const stages = dockerfile.split(/^FROM /m);
  const last = stages[stages.length - 1];
  const copies = [...last.matchAll(/^COPY --from=build (\S+) (\S+)$/gm)].map((m) => ({ from: m[1], to: m[2] }));
  const json = (instruction: string) => {
    const match = new RegExp(`^${instruction} (\\[.*\\])$`, 'm').exec(last);
    assert.ok(match, `${instruction} in exec form`);
    return JSON.parse(match[1]) as string[];
  };
  const runs = [...last.matchAll(/^RUN (.+)$/gm)].map((m) => m[1]);
  return { copies, runs, command: [...json('ENTRYPOINT'), ...json('CMD')] };
}

test('the runtime stage of the Dockerfile runs the service from its copied files alone', async () => {
  const stage = runtimeStage(await readFile(join(ROOT, 'Dockerfile'), 'utf8'));
  assert.deepEqual(stage.command.slice(0, 3), ['node', '/app/dist/cli.js', 'serve']);
  assert.ok(stage.command.includes('--allow-from'), 'the container allows the container network');
  assert.ok(
    stage.runs.some((run) => /\bchmod 700 \/data\b/.test(run)),
    'the data volume is private to the service user',
  );

  const root = await tempDir('ra-container-');
  try {
    const at = (path: string) => join(root.dir, path);
    for (const { from, to } of stage.copies) await cp(join(ROOT, from.replace(/^\/src\//, '')), at(to), { recursive: true });
    // The image's paths moved under the temp root; loopback only and a free port for the test.
    const args = stage.command.slice(1).map((arg) => (arg.startsWith('/') ? at(arg) : arg));
    const child = spawn(process.execPath, [...args, '--port', '0', '--allow-from', '127.0.0.1'], {
      cwd: root.dir,
      env: { PATH: process.env.PATH, HOME: root.dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.on('data', () => {
        const match = /listening on http:\/\/[^:]+:(\d+)/.exec(output);
        if (match) resolve(Number(match[1]));
      });
      void exited.then((code) => reject(new Error(`exited with ${code}:\n${output}`)));
    });
    try {
      const health = await (await fetch(`http://127.0.0.1:${port}/health`)).json();
      assert.equal(health.status, 'ok');
      const config = JSON.parse(await readFile(join(at('/data'), 'service.json'), 'utf8'));
      const client = await TestClient.authed(`ws://127.0.0.1:${port}/ws`, config.auth_token);
      const conversations = await client.request({ type: 'list_conversations' });
      assert.equal(conversations.status, 'ok');
      client.close();
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0, output);
    }
  } finally {
    await root.cleanup();
  }
});
