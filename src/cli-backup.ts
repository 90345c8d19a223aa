// `remote-assistant backup` and `restore` (README, "Backup and restore"). A backup needs the database
// as it is between two transactions: when a service runs on the data directory (it holds service.lock)
// only that service can take it, so the command asks it (the owner-only `backup` command, with the
// access token from service.json, over loopback); when none runs, it opens the store itself.
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { ConfigFile } from './config/config-file';
import { PRIVATE_FILE_MODE } from './platform/file-modes';
import { ADDRESS_FILE_NAME, defaultDataDir, EDITOR_HOST_FILE_NAME } from './platform/paths';
import { tcpChannelOf, type CommandInputOf, type CommandType, type ResultOf } from './protocol';
import { ProtocolClient } from './protocol/client';
import { backupDataDir, DataDirInUseError, openStore, pidAlive, restoreDataDir } from './store';
import { CLI_ACTOR } from './commands/audit-actor';
import { backupEntry, restoreEntry } from './commands/audit-records';

/** A backup of a big history takes a while; the command waits this long for the service's answer. */
const BACKUP_TIMEOUT_MS = 30 * 60_000;

export async function writeListeningAddress(dataDir: string, port: number): Promise<void> {
  await writeFile(path.join(dataDir, ADDRESS_FILE_NAME), JSON.stringify({ pid: process.pid, port }), { mode: PRIVATE_FILE_MODE }).catch(() => undefined);
}

export async function forgetListeningAddress(dataDir: string): Promise<void> {
  await rm(path.join(dataDir, ADDRESS_FILE_NAME), { force: true });
}

/** The port of the live process that wrote `file` (`{pid, port}`), if it is alive. */
async function livePort(file: string): Promise<number | undefined> {
  try {
    const info = JSON.parse(await readFile(file, 'utf8')) as { pid?: unknown; port?: unknown };
    if (typeof info.port === 'number' && typeof info.pid === 'number' && pidAlive(info.pid)) return info.port;
  } catch {
    // No such file, or not ours: try the next place.
  }
  return undefined;
}

/**
 * Sends one owner command to the service running on `dataDir` (the access token from service.json, over
 * loopback) and resolves with its answer's data; its error as an Error.
 */
export async function askRunningService<T extends CommandType>(dataDir: string, port: number | undefined, command: CommandInputOf<T>, timeoutMs: number): Promise<ResultOf<T>> {
  const configFile = await ConfigFile.load(dataDir);
  const config = configFile.current;
  const token = configFile.authToken;
  await configFile.close();
  const target = port ?? (await livePort(path.join(dataDir, ADDRESS_FILE_NAME))) ?? (await livePort(path.join(dataDir, EDITOR_HOST_FILE_NAME))) ?? tcpChannelOf(config).port;
  const socket = new WebSocket(`ws://127.0.0.1:${target}/ws`);
  const client = new ProtocolClient({ send: (text) => socket.send(text) }, { idPrefix: command.type, timeoutMs });
  socket.on('message', (data) => client.receive(data.toString()));
  socket.on('close', (code) => client.closed(`the service closed the connection (${code})`));
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', (error) => reject(new Error(`no service could be reached for ${dataDir} on port ${target} (${error.message}); start it (serve) or give its port with --port`)));
    });
    const hello = await client.authenticate(token, 10_000);
    if (hello.status !== 'ok') throw new Error(`the service on port ${target} refused the access token: ${hello.error}`);
    const answer = await client.request(command);
    if (answer.status !== 'ok') throw new Error(answer.error);
    return answer.data as ResultOf<T>;
  } finally {
    socket.close();
  }
}

async function isDataDir(dir: string): Promise<boolean> {
  return (await stat(dir).catch(() => undefined))?.isDirectory() === true;
}

export async function backupCommand(args: string[], usage: string): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { 'data-dir': { type: 'string' }, port: { type: 'string' } } });
  if (positionals.length !== 1) {
    console.error(`give the directory to write the backup into\n${usage}`);
    return 2;
  }
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port <= 65535)) {
    console.error(`invalid --port ${values.port}: expected an integer from 1 to 65535`);
    return 2;
  }
  const dataDir = path.resolve(values['data-dir'] ?? defaultDataDir());
  const dest = path.resolve(positionals[0]);
  if (!(await isDataDir(dataDir))) {
    console.error(`no data directory at ${dataDir}`);
    return 1;
  }
  let done: { path: string; files: string[] };
  let store;
  try {
    store = await openStore(dataDir);
  } catch (error) {
    if (!(error instanceof DataDirInUseError)) throw error;
  }
  if (store) {
    try {
      done = await backupDataDir(store, dest);
      await store.audit.append(backupEntry(CLI_ACTOR, done.path, done.files.length));
    } finally {
      await store.close();
    }
  } else {
    done = await askRunningService(dataDir, port, { type: 'backup', path: dest }, BACKUP_TIMEOUT_MS);
  }
  console.log(`backup of ${dataDir} written to ${done.path} (${done.files.length} files)`);
  return 0;
}

/** The restore is recorded in the restored data directory's own audit log (its store opened, migrated if older, closed). */
async function recordRestore(dataDir: string, backup: string, createdAt: string, files: number): Promise<void> {
  const store = await openStore(dataDir);
  try {
    await store.audit.append(restoreEntry(CLI_ACTOR, backup, createdAt, files));
  } finally {
    await store.close();
  }
}

export async function restoreCommand(args: string[], usage: string): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { 'data-dir': { type: 'string' } } });
  if (positionals.length !== 1) {
    console.error(`give the backup directory to restore\n${usage}`);
    return 2;
  }
  const dataDir = path.resolve(values['data-dir'] ?? defaultDataDir());
  const backup = path.resolve(positionals[0]);
  try {
    const { files, createdAt } = await restoreDataDir(backup, dataDir);
    await recordRestore(dataDir, backup, createdAt, files.length);
    console.log(`restored ${files.length} files into ${dataDir}; start it with: remote-assistant serve --data-dir ${JSON.stringify(dataDir)}`);
    return 0;
  } catch (error) {
    if (error instanceof DataDirInUseError) {
      console.error(`${error.message}: stop that service before restoring into its data directory, or restore into another one`);
      return 1;
    }
    throw error;
  }
}
