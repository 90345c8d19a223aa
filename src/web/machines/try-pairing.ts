/**
 * Adding a machine from a pairing link: the link's secret is spent on a trial connection first, and
 * only a machine that accepted it (and gave this phone its device credential) is added. A refused,
 * spent or expired link, or a machine this page cannot reach, changes nothing on the phone.
 */
import type { Pairing } from '../pairing';
import { saysPairAgain } from '../websocket-connection';
import { connectMachine } from './machine-connection';

export type TrialOutcome = { ok: true; pairing: Pairing } | { ok: false; problem: string };

/** How long the trial waits for the machine (through a relay it may take a few round trips). */
const TRIAL_MS = 20_000;

export function tryPairing(start: Pairing, timeoutMs = TRIAL_MS): Promise<TrialOutcome> {
  let pairing = start;
  const host = hostOf(start.url);
  // One attempt only: a machine that cannot be reached is said so now, not retried behind the user's back.
  const connection = connectMachine({ pairing: start, update: (change) => void (pairing = change(pairing)) }, { baseDelayMs: 60_000 });
  return new Promise<TrialOutcome>((resolve) => {
    let done = false;
    let stop: (() => void) | undefined;
    const finish = (outcome: TrialOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stop?.();
      connection.close();
      resolve(outcome);
    };
    const unreachable = `Could not reach ${host}. Is the computer on, and this phone on its network?`;
    const timer = setTimeout(() => finish({ ok: false, problem: unreachable }), timeoutMs);
    stop = connection.onState(({ state, detail }) => {
      if (state === 'open') finish({ ok: true, pairing });
      // A refused link (close 4401) is retried slowly by the connection (a relay can forge it): here it is said at once.
      else if (state === 'error' || saysPairAgain(detail)) finish({ ok: false, problem: refusal(host, detail) });
      else if (state === 'closed') finish({ ok: false, problem: unreachable });
    });
    if (done) stop();
  });
}

/** What a refused first `auth` means here (websocket-connection.ts names the close codes' details). */
function refusal(host: string, detail: string | undefined): string {
  if (detail && /not allowed/.test(detail)) return `${host} does not let this device connect (its allow_from setting).`;
  if (detail && /invalid service address/.test(detail)) return `The link's address is not one this page can open.`;
  return `${host} refused this pairing link: it was already used, or is more than 10 minutes old. Make a new one on the computer (remote-assistant pair) and try again.`;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the computer';
  }
}
