import type { ClientSession } from '../../commands/session';

interface State {
  deviceId?: string;
  visible: boolean;
}

/**
 * Which devices' pages are visible in the foreground now, as the pages report it (`client_state`): a
 * device whose page is visible shows events itself, so nothing is pushed to it. The state belongs to
 * the session that reported it: once that session is closed the device counts as hidden, whatever it
 * said last (a socket left open in the background must not silence notifications).
 */
export class DeviceVisibility {
  private readonly bySession = new Map<ClientSession, State>();

  constructor(private readonly isOpen: (session: ClientSession) => boolean) {}

  /** The session names its device (push_subscribe, client_state), so a later client_state may leave the id out. */
  nameDevice(session: ClientSession, deviceId: string): void {
    this.prune();
    const state = this.bySession.get(session);
    this.bySession.set(session, { deviceId, visible: state?.deviceId === deviceId ? state.visible : false });
  }

  report(session: ClientSession, deviceId: string | undefined, visible: boolean): { device_id: string | null; visible: boolean } {
    this.prune();
    const id = deviceId ?? this.bySession.get(session)?.deviceId;
    this.bySession.set(session, { deviceId: id, visible });
    return { device_id: id ?? null, visible };
  }

  /** The device the session named last, if any. */
  deviceOf(session: ClientSession): string | undefined {
    return this.bySession.get(session)?.deviceId;
  }

  /** Whether an open session of the device's own person (`mayReport`) says its page is on screen. */
  isVisible(deviceId: string, mayReport: (session: ClientSession) => boolean): boolean {
    for (const [session, state] of this.bySession) {
      if (state.deviceId === deviceId && state.visible && this.isOpen(session) && mayReport(session)) return true;
    }
    return false;
  }

  private prune(): void {
    for (const session of [...this.bySession.keys()]) if (!this.isOpen(session)) this.bySession.delete(session);
  }
}
