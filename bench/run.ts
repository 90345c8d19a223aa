// `npm run bench`: every benchmark, each printing its figures as ratios against a baseline measured
// in the same run (these machines are noisy; absolute numbers mean little).
import { spawnSync } from 'node:child_process';
import { benchAgent } from './agent';
import { benchAgentContext } from './agent-context';
import { benchAuth } from './auth';
import { benchChanges } from './changes';
import { benchEditor } from './editor';
import { benchExport } from './export';
import { benchFollow } from './follow';
import { benchHistory } from './history';
import { runPersistBench } from './persist';
import { benchPush } from './push';
import { benchRelay } from './relay';
import { benchRelayService } from './relay-service';
import { benchStall } from './stall';
import { benchStart } from './start';
import { benchWebhook } from './webhook';
import { benchWebSocket } from './ws';
import { benchWorktree } from './worktree';

async function main() {
  const only = process.argv.slice(2);
  const benches: [string, () => Promise<unknown>][] = [
    ['ws', benchWebSocket],
    ['persist', runPersistBench],
    ['webhook', benchWebhook],
    ['agent', benchAgent],
    ['agent-context', benchAgentContext],
    ['auth', benchAuth],
    ['editor', benchEditor],
    ['relay', benchRelay],
    ['relay-service', benchRelayService],
    ['push', benchPush],
    ['follow', benchFollow],
    ['history', benchHistory],
    ['export', benchExport],
    ['start', benchStart],
    ['stall', benchStall],
    ['worktree', benchWorktree],
    ['changes', benchChanges],
  ];
  const chosen = benches.filter(([name]) => only.length === 0 || only.includes(name));
  if (chosen.length === 1) {
    const [[name, run]] = chosen;
    console.log(`\n== ${name} ==`);
    await run();
    return;
  }
  // Several: each in its own process. The services under test live in the bench's process, so what one
  // bench left on the heap weighed on the next one's figures, and a baseline spawned from a 250 MB process
  // (the start's `node -e 0`) read 101-115 ms instead of 59-90.
  for (const [name] of chosen) {
    const result = spawnSync(process.execPath, [...process.execArgv, __filename, name], { stdio: 'inherit' });
    if (result.status !== 0) throw new Error(`bench ${name} failed (exit code ${result.status ?? result.signal})`);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
