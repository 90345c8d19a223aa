import { randomUUID } from 'node:crypto';
import { generateKeyPair, parseKeyPair, type KeyPairText } from '../../tunnel';
import type { Store } from '../../store';

/** This machine as the relay and its clients know it: its id, and its X25519 key pair for the end-to-end tunnel. */
export interface MachineIdentity {
  machineId: string;
  keyPair: KeyPairText;
}

const MACHINE_ID_KEY = 'machine_id';
const MACHINE_KEY_KEY = 'machine_key';

// One creation per store even when several callers ask at once (a second key would orphan paired phones).
const identities = new WeakMap<Store, Promise<MachineIdentity>>();

/** Created once, kept in the store's meta table, then the same for every registration and pairing. */
export function machineIdentityOf(store: Store): Promise<MachineIdentity> {
  let identity = identities.get(store);
  if (!identity) {
    identity = loadOrCreate(store);
    identities.set(store, identity);
    identity.catch(() => identities.delete(store));
  }
  return identity;
}

export async function machineIdOf(store: Store): Promise<string> {
  return (await machineIdentityOf(store)).machineId;
}

async function loadOrCreate(store: Store): Promise<MachineIdentity> {
  let machineId = store.meta.get(MACHINE_ID_KEY);
  if (!machineId) {
    machineId = randomUUID();
    await store.meta.set(MACHINE_ID_KEY, machineId);
  }
  let keyPair = parseStored(store.meta.get(MACHINE_KEY_KEY));
  if (!keyPair) {
    keyPair = generateKeyPair();
    await store.meta.set(MACHINE_KEY_KEY, JSON.stringify(keyPair));
  }
  return { machineId, keyPair };
}

function parseStored(text: string | undefined): KeyPairText | undefined {
  if (!text) return undefined;
  try {
    return parseKeyPair(JSON.parse(text));
  } catch {
    return undefined;
  }
}
