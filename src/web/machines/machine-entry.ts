/** A paired machine as the switcher and the combined list see it: its record and its live status. */
import type { Machine } from './machine-store';
import type { MachineStatus } from './machine-status';

export interface MachineEntry {
  machine: Machine;
  status: MachineStatus;
}

/** What the switcher says about a machine, most urgent first: offline, prompts waiting, a run going. */
export function stateLabel(status: MachineStatus): { state: string; label: string } {
  if (status.state === 'offline') return { state: 'offline', label: 'offline' };
  if (status.state === 'connecting') return { state: 'connecting', label: 'connecting…' };
  if (status.waiting.size > 0) return { state: 'waiting', label: `${status.waiting.size} waiting` };
  if (status.running > 0) return { state: 'running', label: 'running' };
  return { state: 'online', label: 'online' };
}

/** How many things wait for the user on these machines (prompts and unseen finished runs). */
export function needsYouCount(entries: readonly MachineEntry[]): number {
  return entries.reduce((sum, entry) => sum + entry.status.waiting.size + entry.status.finished.length, 0);
}
