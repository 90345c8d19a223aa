import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { InstructionFiles, MAX_CACHED_INSTRUCTION_FILES } from '../../src/agent/prompt/instruction-files';
import { tempDir } from '../helpers/temp';

// A repository's instruction files are its content: a repository with an AGENTS.md in each of
// thousands of folders, each of the most that is read, must not make the service keep them all.

test('attack: 300 large nested AGENTS.md touched over several turns are not all kept in memory', async (t) => {
  const { dir, cleanup } = await tempDir();
  t.after(cleanup);
  const folders = Array.from({ length: 300 }, (_, i) => join(dir, `pkg${i}`));
  const big = `# Rules\n${'x'.repeat(200 * 1024)}\n`;
  for (const folder of folders) {
    await mkdir(folder);
    await writeFile(join(folder, 'AGENTS.md'), big);
  }
  const files = new InstructionFiles(undefined);
  // Each turn's tools touched 60 folders (a search across the repository).
  for (let turn = 0; turn < 5; turn += 1) {
    const touched = folders.slice(turn * 60, turn * 60 + 60).map((folder) => join(folder, 'index.ts'));
    const inForce = await files.inForce([dir], touched);
    assert.ok(
      inForce.some((file) => file.path === `pkg${turn * 60 + 59}/AGENTS.md`),
      'the nearest file of the newest touched path is in force',
    );
  }
  assert.ok(files.cachedFiles <= MAX_CACHED_INSTRUCTION_FILES, `keeps ${files.cachedFiles} files`);
});
