/**
 * The machines this phone is paired with (one pairing each: address, name, device credential) and which
 * one is on screen, in localStorage. A machine is known by its relay key, or on the LAN by its socket's
 * address: pairing the same machine again updates it, another machine is added beside the others.
 * Everything the page keeps for one machine (its open conversation, its outbox, its finished runs) lives
 * under that machine's own prefix, so two machines never mix. The single pairing of earlier builds
 * (`remote-assistant.pairing`) becomes the first machine, with its conversation and outbox.
 */
import { readsAs } from '../../protocol/display-name';
import { machineName, readPairing, type Pairing } from '../pairing';

export interface Machine {
  id: string;
  /** A short random name for the machine in URLs (its push worker's scope, a notification's `machine=`). */
  slot: string;
  name: string;
  pairing: Pairing;
}

/** What the chat page stores per machine (chat/kept-list.ts KeptStorage-compatible). */
export interface MachineStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

const LIST_KEY = 'remote-assistant.machines';
const LEGACY_PAIRING_KEY = 'remote-assistant.pairing';
/** Per-machine keys of earlier builds, moved under the first machine's prefix. */
const LEGACY_MACHINE_KEYS = ['remote-assistant.conversation', 'remote-assistant.outbox'];

interface Stored {
  machines: Machine[];
  current?: string;
}

export function machineIdOf(pairing: Pairing): string {
  return pairing.relay ? `relay:${pairing.relay.machineKey}` : `lan:${pairing.url}`;
}

/** A name for a machine whose link carried none: the relay's machine id or the LAN host. */
function defaultName(pairing: Pairing): string {
  try {
    const url = new URL(pairing.url);
    return pairing.relay ? `Computer ${(url.searchParams.get('machine_id') ?? '').slice(0, 8)}`.trim() : url.host;
  } catch {
    return 'Computer';
  }
}

export class MachineStore {
  private state: Stored;

  constructor(private readonly storage: Storage = window.localStorage) {
    this.state = this.load();
  }

  get all(): readonly Machine[] {
    return this.state.machines;
  }

  get current(): Machine | undefined {
    return this.find(this.state.current) ?? this.state.machines[0];
  }

  find(id: string | undefined): Machine | undefined {
    return this.state.machines.find((m) => m.id === id);
  }

  bySlot(slot: string): Machine | undefined {
    return this.state.machines.find((m) => m.slot === slot);
  }

  /** A pairing link was opened: the machine is added (or, already known, its pairing renewed) and shown. */
  add(pairing: Pairing, name?: string): Machine {
    const id = machineIdOf(pairing);
    const known = this.find(id);
    const machine: Machine = { id, slot: known?.slot ?? newSlot(), name: known?.name ?? this.uniqueName(name ?? defaultName(pairing)), pairing };
    this.state.machines = known ? this.state.machines.map((m) => (m.id === id ? machine : m)) : [...this.state.machines, machine];
    this.state.current = id;
    this.save();
    return machine;
  }

  setCurrent(id: string): void {
    if (!this.find(id) || this.state.current === id) return;
    this.state.current = id;
    this.save();
  }

  /** The machine's pairing changed (a device credential given, a relay secret spent). */
  updatePairing(id: string, change: (pairing: Pairing) => Pairing): void {
    const machine = this.find(id);
    if (!machine) return;
    machine.pairing = change(machine.pairing);
    this.save();
  }

  rename(id: string, name: string): void {
    const machine = this.find(id);
    const cleaned = machineName(name);
    if (!machine || !cleaned) return;
    machine.name = cleaned;
    this.save();
  }

  /** Forgets the machine and everything kept for it. */
  remove(id: string): void {
    this.state.machines = this.state.machines.filter((m) => m.id !== id);
    if (this.state.current === id) this.state.current = this.state.machines[0]?.id;
    const prefix = prefixOf(id);
    for (const key of this.keys()) if (key.startsWith(prefix)) this.storage.removeItem(key);
    this.save();
  }

  /** Where the page keeps what belongs to one machine: the same keys, under the machine's prefix. */
  storageOf(id: string): MachineStorage {
    const prefix = prefixOf(id);
    const storage = this.storage;
    return {
      getItem: (key) => safely(() => storage.getItem(prefix + key), null),
      setItem: (key, value) => safely(() => storage.setItem(prefix + key, value), undefined),
      removeItem: (key) => safely(() => storage.removeItem(prefix + key), undefined),
    };
  }

  /** `name`, or `name (2)`...: never one that reads as another machine's (a link's name may add an invisible character to it). */
  private uniqueName(name: string): string {
    const taken = new Set(this.state.machines.map((m) => readsAs(m.name)));
    if (!taken.has(readsAs(name))) return name;
    let n = 2;
    while (taken.has(readsAs(`${name} (${n})`))) n += 1;
    return `${name} (${n})`;
  }

  private load(): Stored {
    const stored = safely(() => JSON.parse(this.storage.getItem(LIST_KEY) ?? 'null') as Partial<Stored> | null, null);
    if (stored && Array.isArray(stored.machines)) {
      const machines = stored.machines.flatMap((m): Machine[] => {
        const pairing = readPairing(m?.pairing);
        const slot = typeof m.slot === 'string' && SLOT.test(m.slot) ? m.slot : newSlot();
        return pairing && typeof m.name === 'string' ? [{ id: machineIdOf(pairing), slot, name: machineName(m.name) || defaultName(pairing), pairing }] : [];
      });
      return { machines, current: typeof stored.current === 'string' ? stored.current : undefined };
    }
    return this.migrate();
  }

  /** The one pairing of an earlier build becomes the first machine, with its conversation and outbox. */
  private migrate(): Stored {
    const legacy = readPairing(safely(() => JSON.parse(this.storage.getItem(LEGACY_PAIRING_KEY) ?? 'null') as unknown, null));
    if (!legacy) return { machines: [] };
    const machine: Machine = { id: machineIdOf(legacy), slot: newSlot(), name: defaultName(legacy), pairing: legacy };
    this.state = { machines: [machine], current: machine.id };
    const own = this.storageOf(machine.id);
    for (const key of LEGACY_MACHINE_KEYS) {
      const value = safely(() => this.storage.getItem(key), null);
      if (value !== null) own.setItem(key, value);
      safely(() => this.storage.removeItem(key), undefined);
    }
    this.save();
    safely(() => this.storage.removeItem(LEGACY_PAIRING_KEY), undefined);
    return this.state;
  }

  private keys(): string[] {
    return safely(() => Array.from({ length: this.storage.length }, (_, i) => this.storage.key(i) ?? ''), []);
  }

  private save(): void {
    // Private mode without storage: the machines last for this page only.
    safely(() => this.storage.setItem(LIST_KEY, JSON.stringify(this.state)), undefined);
  }
}

const prefixOf = (id: string) => `remote-assistant.machine/${id}/`;
const SLOT = /^[0-9a-f]{16}$/;
const newSlot = () => Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('');

function safely<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}
