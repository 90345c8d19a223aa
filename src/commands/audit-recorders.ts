import type { Logger } from '../log/logger';
import type { Store } from '../store';
import { actorOf } from './audit-actor';
import { loginBurstEntry, loginEntry } from './audit-records';
import type { ClientSession } from './session';

// Acts outside the store that the audit log records (docs/design.md, "The audit log"): each is appended
// in its own transaction right after the act; a failed append is logged, never thrown at the act.

type LoginBurst = Parameters<typeof loginBurstEntry>[0];

/** A burst of failed logins (transport/auth/login-failures.ts: one per address, kind and window) is one counted entry. */
export function recordLoginBursts(failures: { onBurst(listener: (burst: LoginBurst) => void): unknown }, store: Pick<Store, 'audit'>, logger: Logger): void {
  failures.onBurst((burst) => {
    const entry = loginBurstEntry(burst);
    if (entry) store.audit.append(entry).catch((error: unknown) => logger.error('audit.not_recorded', { kind: 'login.failed_burst', error }));
  });
}

/**
 * A paired device's connection is a login worth a record (its pairing has its own entry); the owner
 * token's and password users' sockets are not (the CLI and editor windows connect often; POST /auth is recorded).
 */
export function deviceLoginRecorder(store: Pick<Store, 'audit' | 'devices'>, logger: Logger): (session: ClientSession, paired: boolean) => void {
  return (session, paired) => {
    if (session.deviceId === undefined || paired) return;
    store.audit.append(loginEntry(actorOf(session, store.devices), 'device')).catch((error: unknown) => logger.error('audit.not_recorded', { kind: 'login', error }));
  };
}
