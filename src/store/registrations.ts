import type { Database } from './database';
import type { RegistrationRow } from './types';

export class RegistrationsRepo {
  constructor(private readonly db: Database) {}

  /** Inserts or replaces the machine's public key (`created_at` kept on update). */
  async upsert(machineName: string, publicKey: string, now: string = new Date().toISOString()): Promise<void> {
    await this.db.write((tx) => {
      tx.run(
        `INSERT INTO registrations (machine_name, public_key, created_at, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (machine_name) DO UPDATE SET public_key = excluded.public_key, updated_at = excluded.updated_at`,
        [machineName, publicKey, now, now],
      );
    });
  }

  get(machineName: string): RegistrationRow | undefined {
    return this.db.get<RegistrationRow>('SELECT machine_name, public_key, created_at, updated_at FROM registrations WHERE machine_name = ?', [machineName]);
  }

  /** Every registered client public key, as stored (the tunnel compares them in canonical form). */
  publicKeys(): string[] {
    return this.db.all<{ public_key: string }>('SELECT public_key FROM registrations').map((row) => row.public_key);
  }
}
