import { randomBytes } from 'node:crypto';
import type { ServiceConfig } from '../protocol/config';

/** A fresh access token: 32 random bytes, base64url (43 characters). */
export function generateAuthToken(): string {
  return randomBytes(32).toString('base64url');
}

const SECRET_ENV_NAME = /api[_-]?key|token|secret|password|passwd|credential|auth/i;

/**
 * Every secret a config holds: api_key, auth_token, websocket (relay) channels' tokens, webhook
 * accounts' secrets, users' password hashes (they allow offline guessing), and MCP servers' environment
 * values whose name looks secret (e.g. GITHUB_TOKEN). The service's redactor holds these plus the live
 * session tokens (the Authenticator adds them): the one list the log, providers' errors and the editor's
 * webview are scrubbed of (src/log/redact.ts).
 */
export function secretValues(config: ServiceConfig): string[] {
  const values = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === 'string' && value !== '') values.add(value);
  };
  add(config.api_key);
  add(config.auth_token);
  for (const channel of config.channels) {
    if (channel.type === 'websocket') add(channel.auth_token);
    if (channel.type === 'webhook') for (const account of Object.values(channel.accounts)) add(account.secret);
  }
  for (const user of config.users) add(user.password_hash);
  for (const server of Object.values(config.mcp_servers)) {
    for (const [name, value] of Object.entries(server.env ?? {})) if (SECRET_ENV_NAME.test(name)) add(value);
  }
  return [...values];
}
