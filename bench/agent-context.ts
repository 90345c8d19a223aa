import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Provider } from '../src/agent/providers/types';
import { Service } from '../src/service';
import { instantProvider } from './agent';
import { fmt } from './util';

/**
 * What the turn's context costs (src/agent/prompt): the environment block (git's branch and status of
 * a repository of 10,000 files) and the instruction files (a root AGENTS.md, CLAUDE.md, the user's
 * own, a nested AGENTS.md per package a tool touches), as the ratio of a turn with them to the same
 * turn without them (ServiceOptions.agentContext false), same run, same repository. The provider
 * answers at once, so the ratio is against the agent's own work alone (a real model call is seconds).
 */
const FILES = 10_000;
const PACKAGES = 100;

async function repository(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ra-bench-ctx-repo-'));
  for (let p = 0; p < PACKAGES; p += 1) {
    await mkdir(join(dir, `pkg${p}`, 'src'), { recursive: true });
    for (let f = 0; f < FILES / PACKAGES; f += 1) await writeFile(join(dir, `pkg${p}`, 'src', `file${f}.ts`), `export const value${f} = ${f};\n`);
    if (p % 10 === 0) await writeFile(join(dir, `pkg${p}`, 'AGENTS.md'), `# pkg${p}\nRun its tests with npm test -w pkg${p}.\n`);
  }
  await writeFile(join(dir, 'AGENTS.md'), `# Project rules\n${'- Keep functions small and named for what they do.\n'.repeat(80)}`);
  await writeFile(join(dir, 'CLAUDE.md'), 'See AGENTS.md.\n');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', ...args], { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'bench');
  await writeFile(join(dir, 'pkg1', 'src', 'file1.ts'), 'export const value1 = 2;\n');
  return dir;
}

/** Reads a file of a different package on each of `reads` steps, then answers: each step may bring a nested AGENTS.md. */
function readingProvider(reads: number): Provider {
  return instantProvider(reads, (i) => ({ id: `r${i}`, name: 'read_file', arguments: { path: `pkg${(i * 10) % PACKAGES}/src/file${i}.ts` } }));
}

async function meanTurnMs(service: Service, turns: number): Promise<number> {
  let conversationId: string | undefined;
  const t0 = performance.now();
  for (let i = 0; i < turns; i += 1) conversationId = (await service.agent.chat({ message: 'bench turn', conversationId, source: { kind: 'lan' } })).conversation_id;
  return (performance.now() - t0) / turns;
}

export async function benchAgentContext(): Promise<Record<string, number>> {
  const repo = await repository();
  const results: Record<string, number> = {};
  try {
    for (const reads of [0, 3]) {
      const measured: Record<string, number> = {};
      for (const withContext of [false, true, true, false, false, true, true, false]) {
        const dataDir = await mkdtemp(join(tmpdir(), 'ra-bench-ctx-data-'));
        await writeFile(join(dataDir, 'service.json'), JSON.stringify({ permission_mode: 'allow', workspace: repo }));
        await writeFile(join(dataDir, 'AGENTS.md'), 'Answer briefly.\n');
        const service = await Service.open({ dataDir, provider: () => readingProvider(reads), agentContext: withContext });
        try {
          await meanTurnMs(service, 5);
          const key = withContext ? 'with' : 'without';
          // Four rounds each, alternating (ABBA, twice), the best kept: the machine is shared and noisy.
          const ms = await meanTurnMs(service, 30);
          measured[key] = Math.min(measured[key] ?? Infinity, ms);
        } finally {
          await service.stop();
          await rm(dataDir, { recursive: true, force: true });
        }
      }
      const ratio = measured.with / measured.without;
      results[`reads${reads}_ratio`] = ratio;
      console.log(
        `turn context (${FILES} files in git, AGENTS.md root + nested, ${reads} read_file steps): ${fmt(measured.with)} ms a turn with it, ` +
          `${fmt(measured.without)} ms without: ${fmt(ratio)}x (goal under 1.2x)`,
      );
    }
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
  return results;
}

if (require.main === module) void benchAgentContext();
