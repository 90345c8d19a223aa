// A tiny stdio MCP server for the MCP tool source's tests. Run with process.execPath:
//   mcp-server.mjs --dir <dir> [--label <name>] [--mode normal|stubborn|crash-on-start|no-init]
// (stubborn: a working server that ignores its stdin closing and SIGTERM.)
// It writes <dir>/<label>.<pid>.pid when it starts (so tests see whether and how often it was spawned)
// and <dir>/child.<pid>.pid for each child `spawn_child` leaves behind.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as z from 'zod';

const argv = process.argv.slice(2);
const option = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const dir = option('dir');
const label = option('label', 'server');
const mode = option('mode', 'normal');

if (dir) writeFileSync(join(dir, `${label}.${process.pid}.pid`), String(process.pid));
process.stderr.write(`test server ${label} starting (mode ${mode})\n`);

if (mode === 'crash-on-start') {
  process.stderr.write('fatal: cannot start\n');
  process.exit(3);
}
if (mode === 'no-init') {
  // Never answers initialize, ignores stdin closing and SIGTERM: only SIGKILL ends it.
  process.on('SIGTERM', () => {});
  process.stdin.resume();
  setInterval(() => {}, 1000);
} else {
  if (mode === 'stubborn') {
    process.on('SIGTERM', () => {});
    setInterval(() => {}, 1000);
  }
  const text = (value) => ({ content: [{ type: 'text', text: String(value) }] });
  const server = new McpServer({ name: `test-${label}`, version: '1.0.0' });

  server.registerTool('add', { description: 'Adds two numbers.', inputSchema: { a: z.number(), b: z.number() } }, ({ a, b }) => text(a + b));
  server.registerTool('echo', { description: 'Echoes the text.', inputSchema: { text: z.string() } }, ({ text: value }) => text(value));
  server.registerTool('fail', { description: 'Always fails.' }, () => ({ content: [{ type: 'text', text: 'it failed on purpose' }], isError: true }));
  server.registerTool('crash', { description: 'Exits the process mid-call.' }, () => {
    process.exit(1);
  });
  server.registerTool(
    'slow',
    { description: 'Waits, then answers.', inputSchema: { ms: z.number().optional() } },
    ({ ms }, extra) =>
      new Promise((resolve) => {
        const timer = setTimeout(() => resolve(text('done')), ms ?? 30_000);
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          if (dir) writeFileSync(join(dir, `cancelled.${process.pid}`), 'cancelled');
        });
      }),
  );
  server.registerTool(
    'types',
    {
      description: 'Takes one parameter of each kind.',
      inputSchema: {
        s: z.string(),
        n: z.number(),
        i: z.number().int(),
        b: z.boolean(),
        o: z.object({ x: z.string() }),
        arr: z.array(z.string()),
        u: z.union([z.string(), z.number()]),
        maybe: z.string().nullable().optional(),
      },
    },
    () => text('ok'),
  );
  server.registerTool('media', { description: 'Returns text, an image and a resource link.' }, () => ({
    content: [
      { type: 'text', text: 'here:' },
      { type: 'image', mimeType: 'image/png', data: Buffer.from([1, 2, 3, 4, 5]).toString('base64') },
      { type: 'resource_link', uri: 'file:///tmp/x.txt', name: 'x.txt' },
    ],
  }));
  // A name with a lone surrogate (JSON carries it as "\ud800"): the service's name for it is made well-formed.
  if (mode === 'lone-name') server.registerTool('lone\ud800', { description: 'Named with half a character.' }, () => text('lone ran'));
  server.registerTool('env', { description: 'The value of an environment variable.', inputSchema: { name: z.string() } }, ({ name }) => text(process.env[name] ?? '(unset)'));
  server.registerTool('spawn_child', { description: 'Leaves a long-lived child process behind.' }, () => {
    const child = spawn(process.execPath, ['-e', 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    if (dir) writeFileSync(join(dir, `child.${child.pid}.pid`), String(child.pid));
    return text(child.pid);
  });
  server.registerTool('add_tool', { description: 'Adds the tool `late` (the list changes).' }, () => {
    server.registerTool('late', { description: 'Added late.' }, () => text('late'));
    return text('added');
  });

  await server.connect(new StdioServerTransport());
}
