import { resolve } from 'node:path';
import type { ServiceConfig } from '../protocol';
import type { Host } from './host';

/** The last `workspace` resolved: asked on every command that names the roots (get_config), it seldom changes. */
let lastWorkspace = { given: '', resolved: '' };
function resolvedWorkspace(given: string): string {
  if (lastWorkspace.given !== given) lastWorkspace = { given, resolved: resolve(given) };
  return lastWorkspace.resolved;
}

/** The workspace roots of file tools: `workspace` of service.json, else the host's folders, else the current directory. */
export function workspaceRootsOf(config: ServiceConfig, host: Host = {}): string[] {
  if (config.workspace) return [resolvedWorkspace(config.workspace)];
  return host.workspaceRoots ? host.workspaceRoots().map((root) => resolve(root)) : [process.cwd()];
}
