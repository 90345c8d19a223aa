// What a `serve` spawned by a bench says: its stdout and stderr as one text, and its port once it says it
// listens (`--port 0`: the port it chose). bench/first-chat-profile.ts and first-chat-v8log.ts read it.
import type { ChildProcess } from 'node:child_process';

export function watchServe(child: ChildProcess): { output: () => string; port: Promise<number> } {
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const port = new Promise<number>((resolve) => {
    const look = () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
      else setTimeout(look, 5);
    };
    look();
  });
  return { output: () => out, port };
}
