// Child process for the push tests (run with `node --import tsx`): pushes the worktree given as JSON in
// argv[2] to `origin` and, as its git push would start, prints the folder git runs in (the push's
// temporary repository) and waits there, never starting it, for the test to kill it (-9).
import { gitStarter } from '../../src/git/git-starter';
import { pushChanges } from '../../src/git/push';
import type { WorktreeRecord } from '../../src/protocol/worktrees';

const start = gitStarter.start;
gitStarter.start = (request, handlers) => {
  if (!request.args.includes('push')) return start(request, handlers);
  process.stdout.write(`${request.args[request.args.indexOf('-C') + 1]}\n`);
  setInterval(() => undefined, 60_000);
  return { ready: new Promise<void>(() => undefined), kill: () => undefined } as unknown as ReturnType<typeof start>;
};
void pushChanges(JSON.parse(process.argv[2] ?? '{}') as WorktreeRecord, 'origin', { allowHooks: false });
