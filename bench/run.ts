// `npm run bench`: every benchmark, each printing its figures as ratios against a baseline measured
// in the same run (these machines are noisy; absolute numbers mean little).
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
    ['worktree', benchWorktree],
    ['changes', benchChanges],
  ];
  for (const [name, run] of benches) {
    if (only.length > 0 && !only.includes(name)) continue;
    console.log(`\n== ${name} ==`);
    await run();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
