import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { authTokenProblem } from '../auth';
import { consoleLogger, levelOf } from '../console-logger';
import { positiveSetting } from '../http';
import { IDLE_TIMEOUT_MS, MAX_CLIENTS_PER_MACHINE, REFUSAL_LOG_WINDOW_MS } from '../limits';
import { NodeRelay } from './relay-server';

const USAGE = `usage: AUTH_TOKEN=<at least 32 characters> node dist/relay.js --port N [--host H] [--static DIR] [--trust-proxy]
  --host         address to listen on (default 127.0.0.1; 0.0.0.0 in a container)
  --static       folder of the phone page served at / (default: media/ beside dist/)
  --trust-proxy  behind a proxy that appends the client's address to X-Forwarded-For: per-address
                 limits use it (without this flag X-Forwarded-For is ignored)
environment: AUTH_TOKEN (required), IDLE_TIMEOUT_MS (default 90000), MAX_CLIENTS_PER_MACHINE (default 1024),
  REFUSAL_LOG_WINDOW_MS (default 60000), RELAY_LOG_LEVEL=debug`;

async function main(): Promise<number> {
  let values: { port?: string; host?: string; static?: string; 'trust-proxy'?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: { port: { type: 'string' }, host: { type: 'string' }, static: { type: 'string' }, 'trust-proxy': { type: 'boolean' }, help: { type: 'boolean' } },
    }));
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const port = Number(values.port ?? 'NaN');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port must be an integer from 0 to 65535\n${USAGE}`);
    return 2;
  }
  const authToken = process.env.AUTH_TOKEN ?? '';
  const problem = authTokenProblem(authToken);
  if (problem) {
    console.error(`relay not started: ${problem} (set it in the environment; use a random value)`);
    return 2;
  }
  const log = consoleLogger(levelOf(process.env.RELAY_LOG_LEVEL));
  const relay = new NodeRelay({
    authToken,
    staticDir: values.static ?? join(__dirname, '..', 'media'),
    log,
    idleTimeoutMs: positiveSetting(process.env.IDLE_TIMEOUT_MS, IDLE_TIMEOUT_MS),
    maxClientsPerMachine: positiveSetting(process.env.MAX_CLIENTS_PER_MACHINE, MAX_CLIENTS_PER_MACHINE),
    trustProxy: values['trust-proxy'] === true,
    refusalLogWindowMs: positiveSetting(process.env.REFUSAL_LOG_WINDOW_MS, REFUSAL_LOG_WINDOW_MS),
  });
  // Listening for signals before announcing the port: a supervisor may stop us right after it.
  const stopping = new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  const address = await relay.listen(port, values.host ?? '127.0.0.1');
  console.log(`relay listening on http://${address.address}:${address.port}`);
  await stopping;
  log.info('relay.stopping');
  await relay.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`relay failed: ${(error as Error).message}`);
    process.exit(1);
  },
);
