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
  const finished = status.finished.length ? ` · ${status.finished.length} finished` : '';
  if (status.waiting.size > 0) return { state: 'waiting', label: `${status.waiting.size} waiting${finished}` };
  if (status.running > 0) return { state: 'running', label: `running${finished}` };
  return { state: 'online', label: `online${finished}` };
}

/**
 * The badge's number: the prompts waiting on these machines. A finished run is listed under "Needs you"
 * and counted on its machine's row, but does not raise the number a waiting prompt raises.
 */
export function needsYouCount(entries: readonly MachineEntry[]): number {
  return entries.reduce((sum, entry) => sum + entry.status.waiting.size, 0);
}

/** Finished runs not yet seen on these machines. */
export function finishedCount(entries: readonly MachineEntry[]): number {
  return entries.reduce((sum, entry) => sum + entry.status.finished.length, 0);
}
