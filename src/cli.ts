import { parseArgs } from 'node:util';
import type { Worker } from 'node:worker_threads';
import { ConfigError, ConfigFile } from './config/config-file';
import { defaultDataDir } from './platform/paths';
import { AllowFromPattern } from './protocol';
import { PortInUseError, Service } from './service';
import { gitStarter } from './git/git-starter';
import type { ParkedStarter } from './git/starter-process';
import { useCompiledSqlJs } from './store/sqljs';
import { hashPassword } from './transport/auth/passwords';
import { pairCommand, pairingText } from './cli-pair';
import { backupCommand, forgetListeningAddress, restoreCommand, writeListeningAddress } from './cli-backup';

// The build runs it before it writes the bundle's code cache (cli-loader.ts, writeCodeCache).
export { rehearsalShortfall, rehearseStart } from './cli-rehearsal';

const USAGE = `usage:
  remote-assistant serve [--data-dir DIR] [--port N] [--allow-from PATTERN,PATTERN...] [--recover] [--break-lock] [--public-host HOST]
  remote-assistant user add --data-dir DIR --username NAME   (password on standard input)
  remote-assistant pair [--data-dir DIR] [--port N]   (a fresh phone pairing link from the running service)
  remote-assistant backup BACKUP_DIR [--data-dir DIR] [--port N]   (while a service runs too)
  remote-assistant restore BACKUP_DIR [--data-dir DIR]   (into a new or empty data directory; not while a service runs on it)`;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function serve(args: string[], historyWorker?: Worker): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      'data-dir': { type: 'string' },
      port: { type: 'string' },
      'allow-from': { type: 'string' },
      // Start despite a damaged journal segment: keep it aside, replay every readable record.
      recover: { type: 'boolean' },
      // Take over service.lock left by another host (a recreated container).
      'break-lock': { type: 'boolean' },
      // The address a phone reaches this machine by, for pairing links (a container's published port).
      'public-host': { type: 'string' },
    },
  });
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    console.error(`invalid --port ${values.port}: expected an integer from 0 to 65535`);
    return 2;
  }
  const allowFrom = values['allow-from']
    ?.split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const badPattern = allowFrom?.find((p) => !AllowFromPattern.safeParse(p).success);
  if (allowFrom?.length === 0 || badPattern !== undefined) {
    console.error(`invalid --allow-from ${JSON.stringify(badPattern ?? values['allow-from'])}: expected address patterns such as 192.168.1.*,::1`);
    return 2;
  }
  const publicHost = values['public-host'];
  if (publicHost !== undefined && !/^[A-Za-z0-9.:-]+$/.test(publicHost)) {
    console.error(`invalid --public-host ${JSON.stringify(publicHost)}: expected a host name or an IP address (no brackets, no port)`);
    return 2;
  }
  const dataDir = values['data-dir'] ?? defaultDataDir();
  // Listening comes before the store's open (begin: service.json loaded, the directory locked): connections
  // wait for the open; "listening on" is printed once the service answers them (docs/protocol.md).
  const service = await Service.begin({ dataDir, port, allowFrom, recoverJournal: values.recover, breakLock: values['break-lock'], publicHost, logToStderr: true, historyWorker });
  // Handlers first: a supervisor (or a test) may send SIGTERM the moment it reads "listening on", and
  // on a busy machine that can come before the next statement runs; the stop must still be graceful.
  const stopSignal = new Promise<string>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  let listening;
  try {
    listening = await service.start();
    // A failed open (a damaged service.db) ends here with its own message, as before listening came first.
    await service.ready;
  } catch (error) {
    await service.stop();
    throw error;
  }
  // `backup` finds the running service by it (cli-backup.ts).
  await writeListeningAddress(dataDir, listening.port);
  console.log(`listening on ${listening.url}`);
  console.log(`data directory: ${dataDir}`);
  // Without the editor, the terminal is the only place a first phone can get its link.
  const paired = service.store.devices.list().length;
  if (paired === 0) console.log(await pairingText(service.createLanPairing(), process.stdout.isTTY === true));
  else console.log(`${paired} device(s) paired; \`remote-assistant pair\` prints a link for another`);
  console.error(`${await stopSignal}: stopping`);
  await service.stop();
  await forgetListeningAddress(dataDir);
  return 0;
}

async function userAdd(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { 'data-dir': { type: 'string' }, username: { type: 'string' } } });
  if (!values.username) {
    console.error(`missing --username\n${USAGE}`);
    return 2;
  }
  const password = (await readStdin()).replace(/\r?\n$/, '');
  if (password.length < 8) {
    console.error('the password (read from standard input) must be at least 8 characters');
    return 2;
  }
  const username = values.username;
  const config = await ConfigFile.load(values['data-dir'] ?? defaultDataDir());
  const passwordHash = await hashPassword(password);
  await config.edit((raw) => {
    const users = Array.isArray(raw.users) ? (raw.users as { username?: unknown }[]).filter((u) => u?.username !== username) : [];
    raw.users = [...users, { username, password_hash: passwordHash }];
  });
  await config.close();
  console.log(`user ${username} saved`);
  return 0;
}

/**
 * `started`: what the entry made before this code loaded (cli-loader.ts): history.db's worker, sql.js's
 * WebAssembly compiled with the tiering budget SQLite runs with, and the git starter's process, parked.
 */
export async function main(argv: string[], started: { historyWorker?: Worker; sqlJs?: WebAssembly.Module; gitStarter?: ParkedStarter } = {}): Promise<number> {
  useCompiledSqlJs(started.sqlJs);
  if (started.gitStarter) gitStarter.adopt(started.gitStarter);
  const [command, sub, ...rest] = argv;
  try {
    if (command === 'serve') return await serve(argv.slice(1), started.historyWorker);
    if (command === 'user' && sub === 'add') return await userAdd(rest);
    if (command === 'pair') return await pairCommand(argv.slice(1), USAGE);
    if (command === 'backup') return await backupCommand(argv.slice(1), USAGE);
    if (command === 'restore') return await restoreCommand(argv.slice(1), USAGE);
    console.error(USAGE);
    return 2;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`service.json is invalid; nothing was changed:\n${error.problems.map((p) => `  - ${p}`).join('\n')}`);
      return 2;
    }
    if (error instanceof PortInUseError) {
      console.error(error.message);
      return 3;
    }
    console.error(error instanceof Error ? error.message : String(error));
    return 1;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
