import { canonicalPublicKey } from '../tunnel';
import type { Database } from './database';
import type { RegistrationRow } from './types';

/** A registered client key as stored, and whether it is refused e2e v1 hellos (docs/relay.md step 3). */
export interface RegisteredKey {
  public_key: string;
  e2e_v2: boolean;
}

export class RegistrationsRepo {
  constructor(private readonly db: Database) {}

  /**
   * Inserts or replaces the machine's public key (`created_at` kept on update). `e2eV2`: the key is
   * refused v1 hellos from the start (paired through a v2 hello); a key that stays (in any spelling) keeps its mark, a
   * new key under the same name starts afresh.
   */
  async upsert(machineName: string, publicKey: string, now: string = new Date().toISOString(), e2eV2 = false): Promise<void> {
    await this.db.write((tx) => {
      const held = tx.get<{ public_key: string; e2e_v2: number }>('SELECT public_key, e2e_v2 FROM registrations WHERE machine_name = ?', [machineName]);
      // The same machine registered before names were made well-formed (s21) is under its old spelling,
      // which no name sent now equals: that row goes (or its key would keep opening the tunnel), and what
      // it held that outlives a new key's row goes to this one: its first registration, and its mark.
      const older = machineName.includes('\ufffd')
        ? tx
            .all<{ stored: string; public_key: string; e2e_v2: number; created_at: string }>('SELECT hex(machine_name) AS stored, public_key, e2e_v2, created_at FROM registrations')
            .filter((row) => olderSpellingOf(row.stored) === machineName)
        : [];
      // The same key in another spelling (an older row's) stays the same key: its mark stays too.
      const marked = e2eV2 || [held, ...older].some((row) => row?.e2e_v2 === 1 && sameKey(row.public_key, publicKey));
      const created = older.map((row) => row.created_at).sort()[0] ?? now;
      tx.run(
        `INSERT INTO registrations (machine_name, public_key, created_at, updated_at, e2e_v2) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (machine_name) DO UPDATE SET public_key = excluded.public_key, updated_at = excluded.updated_at, e2e_v2 = excluded.e2e_v2`,
        [machineName, publicKey, created, now, marked ? 1 : 0],
      );
      for (const row of older) tx.run('DELETE FROM registrations WHERE hex(machine_name) = ?', [row.stored]);
    });
  }

  get(machineName: string): RegistrationRow | undefined {
    return this.db.get<RegistrationRow>('SELECT machine_name, public_key, created_at, updated_at FROM registrations WHERE machine_name = ?', [machineName]);
  }

  /** Every registered client key, as stored (the tunnel compares them in canonical form). */
  keys(): RegisteredKey[] {
    return this.db.all<{ public_key: string; e2e_v2: number }>('SELECT public_key, e2e_v2 FROM registrations').map((row) => ({ public_key: row.public_key, e2e_v2: row.e2e_v2 === 1 }));
  }

  /** Refuses v1 hellos from these keys (their stored spellings) from now on. */
  async markE2eV2(publicKeys: readonly string[]): Promise<void> {
    await this.db.write((tx) => {
      for (const key of publicKeys) tx.run('UPDATE registrations SET e2e_v2 = 1 WHERE public_key = ?', [key]);
    });
  }
}

/**
 * The name an older build stored as these bytes (hex), as it is spelled now; undefined when they hold no
 * lone surrogate. Before s21 a name's lone surrogates reached sql.js as sent, which wrote each as the three
 * bytes ED A0-BF 80-BF (read back as three U+FFFD); a name is now made well-formed first, each lone
 * surrogate one U+FFFD (protocol/display-name.ts).
 */
export function olderSpellingOf(hex: string): string | undefined {
  const bytes = Buffer.from(hex, 'hex');
  const out: number[] = [];
  let found = false;
  for (let i = 0; i < bytes.length; i += 1) {
    if (bytes[i] === 0xed && i + 2 < bytes.length && bytes[i + 1]! >= 0xa0 && bytes[i + 1]! <= 0xbf && (bytes[i + 2]! & 0xc0) === 0x80) {
      out.push(0xef, 0xbf, 0xbd);
      found = true;
      i += 2;
    } else out.push(bytes[i]!);
  }
  return found ? Buffer.from(out).toString('utf8') : undefined;
}

/** Whether two stored spellings name the same key (canonical forms; text that is no key compares as it is). */
function sameKey(a: string, b: string): boolean {
  return (canonicalPublicKey(a) ?? a) === (canonicalPublicKey(b) ?? b);
}
