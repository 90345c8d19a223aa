import { BurstLog } from '../../log/burst-log';
import type { Logger } from '../../log/logger';
import { BODY_INCOMPLETE_EVENT } from '../../protocol';

/** The window of the cut-body log lines, as the other burst logs' (a minute). */
export const BODY_INCOMPLETE_LOG_WINDOW_MS = 60_000;

/** What a cut body is counted under: its address (`other addresses` past the burst log's bound), method and path. */
export type CutBodyLabels = { address: string; method: string; path: string };

/**
 * The log of request bodies the network cut short (IncompleteBody: the client's, so at info), grouped
 * as the wrong credentials are (BurstLog): a window's first cut from an address to a path is a line
 * (BODY_INCOMPLETE_EVENT), the rest one counted line when the window ends; a flood of cut bodies (a
 * login or a webhook reads its body before any credential is known) writes a bounded log. Each cut is
 * in it once, a webhook's past its forgiven count included (incoming.ts).
 */
export function bodyIncompleteLog(logger: Logger, now: () => number = Date.now, windowMs = BODY_INCOMPLETE_LOG_WINDOW_MS): BurstLog<CutBodyLabels> {
  return new BurstLog<CutBodyLabels>(
    logger,
    {
      first: BODY_INCOMPLETE_EVENT,
      burst: `${BODY_INCOMPLETE_EVENT}_burst`,
      level: 'info',
      message: (b) => `${b.count} request bodies to ${b.method} ${b.path} from ${b.address} cut short in ${b.window_seconds} s`,
    },
    now,
    windowMs,
  );
}
