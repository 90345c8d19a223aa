import { loginLimitKey } from '../http/allow-from';

/** Failed logins from one address within one window, reported once the window ends. */
export interface LoginBurst {
  address: string;
  count: number;
  windowMs: number;
  /** How they failed: `password` (POST /auth), `token` or `pairing` (a socket's first frame). */
  kinds: string[];
}

export interface LoginBurstOptions {
  /** Length of a window, from an address's first failure (default 60 s). */
  windowMs?: number;
  /** Fewer failures than this in a window are not a burst (a mistyped password). Default 5. */
  minCount?: number;
  onBurst(burst: LoginBurst): void;
}

/** Addresses counted at once; failures from further addresses are counted together under `other`. */
const MAX_ADDRESSES = 10_000;

/**
 * Counts failed logins per address (grouped as the login limit groups them: an IPv6 /64 is one), so a
 * burst becomes one counted report per window and address, whatever its size: the audit log gets one
 * entry, not one per guess (docs/protocol.md, "Audit log"). Memory is bounded by MAX_ADDRESSES windows.
 */
export class LoginBursts {
  private readonly windows = new Map<string, { count: number; kinds: Set<string>; timer: NodeJS.Timeout }>();
  private readonly windowMs: number;
  private readonly minCount: number;

  constructor(private readonly options: LoginBurstOptions) {
    this.windowMs = options.windowMs ?? 60_000;
    this.minCount = options.minCount ?? 5;
  }

  failed(rawAddress: string, kind: string): void {
    const key = loginLimitKey(rawAddress);
    const address = this.windows.has(key) || this.windows.size < MAX_ADDRESSES ? key : 'other';
    const open = this.windows.get(address);
    if (open) {
      open.count += 1;
      open.kinds.add(kind);
      return;
    }
    const timer = setTimeout(() => this.close(address), this.windowMs);
    timer.unref();
    this.windows.set(address, { count: 1, kinds: new Set([kind]), timer });
  }

  /** Reports every open window now (the service stops). */
  flush(): void {
    for (const address of [...this.windows.keys()]) this.close(address);
  }

  private close(address: string): void {
    const window = this.windows.get(address);
    if (!window) return;
    clearTimeout(window.timer);
    this.windows.delete(address);
    if (window.count >= this.minCount) this.options.onBurst({ address, count: window.count, windowMs: this.windowMs, kinds: [...window.kinds].sort() });
  }
}
