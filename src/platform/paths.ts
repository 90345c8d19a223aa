import { homedir } from 'node:os';
import { join } from 'node:path';

export const APP_NAME = 'remote-assistant';
export const CONFIG_FILE_NAME = 'service.json';
export const DATABASE_FILE_NAME = 'service.db';
export const LOG_FILE_NAME = 'service.log';
/** `{pid, port}` of the running `serve`, so `backup` can reach it (written once it listens). */
export const ADDRESS_FILE_NAME = 'service.address.json';
/** `{pid, port}` of the editor window hosting the service (extension/hosting.ts). */
export const EDITOR_HOST_FILE_NAME = 'editor-host.json';

/** The headless app data directory (service-spec 2, "Local storage"). */
export function defaultDataDir(platform: NodeJS.Platform = process.platform, env = process.env, home = homedir()): string {
  if (platform === 'win32') return join(env.APPDATA ?? join(home, 'AppData', 'Roaming'), APP_NAME);
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', APP_NAME);
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), APP_NAME);
}
